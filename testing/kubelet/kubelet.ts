// A kubelet's pod-certificate duties, for tests on a control plane where no kubelet runs: it
// registers its Node, sees pods bound to it, asks for their certificates as the node, watches the
// requests it made, and lists the trust bundles its pods project.
import type { KubeConfig, V1LabelSelector, V1Node, V1Pod, V1PodCertificateProjection, V1ServiceAccount } from '@kubernetes/client-node';
import { connectionFromKubeConfig, corePath, Informer, type InformerEvent, KubeApiError, type ListPage, KubeRestClient } from '@eso-mtls/kubernetes';
import { CERTIFICATES_V1, CLUSTER_TRUST_BUNDLES_PATH, type ClusterTrustBundle, type PodCertificateRequest, podCertificateRequestsPath } from './api.js';
import { generateKubeletKey, type KubeletKey, type KubeletKeyType, stubPkcs10Request } from './keys.js';
import { outcomeOf, type RequestOutcome } from './outcome.js';

/** A pod to run on the kubelet's node, with one projected volume for its certificate and trust bundle. */
export interface PodCertificatePodSpec {
  readonly namespace: string;
  readonly name: string;
  /** Created (with the namespace) if missing. */
  readonly serviceAccountName: string;
  readonly labels?: Readonly<Record<string, string>>;
  /** The `podCertificate` source; `credentialBundlePath` defaults to `credentials.pem`. */
  readonly podCertificate: {
    readonly signerName: string;
    readonly keyType: KubeletKeyType;
    readonly maxExpirationSeconds?: number;
    readonly credentialBundlePath?: string;
  };
  /** The `clusterTrustBundle` source in the same volume, if any; `path` defaults to `ca.crt`. */
  readonly clusterTrustBundle?: { readonly signerName: string; readonly labelSelector: V1LabelSelector; readonly path?: string };
}

/** A pod as its node sees it, with the UID of its ServiceAccount (which the kubelet reads to fill in requests). */
export interface KubeletPod {
  readonly pod: V1Pod;
  readonly serviceAccountUid: string;
}

/** What {@link PodCertificateKubelet.requestCertificate} may change from the pod's projection, to test refusals. */
export interface RequestOptions {
  readonly signerName?: string;
  readonly keyType?: KubeletKeyType;
  readonly maxExpirationSeconds?: number;
  /** Rewrites the DER of the stub request before it is sent (e.g. to break its signature). */
  readonly stubRequest?: (der: Uint8Array) => Uint8Array;
  /** The key to ask for instead of a fresh one of the keyType (e.g. one with a weak RSA exponent). */
  readonly key?: KubeletKey;
}

/** A PodCertificateRequest the kubelet created, and the key only it holds. */
export interface KubeletRequest {
  readonly request: PodCertificateRequest;
  readonly key: KubeletKey;
}

/** The name of the projected volume {@link PodCertificateKubelet.runPod} gives each pod. */
export const POD_CERTIFICATE_VOLUME = 'pod-certificates';

// The Node authorizer's graph and NodeRestriction's caches follow the API by informers, a few
// milliseconds behind a write; the kubelet retries such refusals, and so does this stand-in.
const CATCHING_UP = /no relationship found between node|while retrieving .* not found/;
const CATCH_UP_LIMIT_MS = 60_000;

/**
 * A node and its kubelet, as far as pod certificates go. Everything it does is done as
 * `system:node:<nodeName>` (group `system:nodes`), so the control plane's Node authorizer and
 * NodeRestriction judge it: start it with `startControlPlane({ nodeAuthorization: true,
 * identities: [nodeIdentity(name)] })`. Only pod creation (the scheduler's and users' part) uses
 * the admin.
 */
export class PodCertificateKubelet {
  private readonly waiters = new Set<(error: Error) => void>();

  private constructor(
    /** The node's name. */
    readonly nodeName: string,
    /** The Node object's UID, as requests carry it. */
    readonly nodeUid: string,
    private readonly admin: KubeRestClient,
    private readonly node: KubeRestClient,
    private readonly requests: Informer<PodCertificateRequest>,
  ) {}

  /**
   * Registers the Node as the kubelet does (creates its own Node object, or adopts an existing one)
   * and starts watching the node's PodCertificateRequests (`spec.nodeName` field selector: a node may
   * list no others). `admin` creates pods; `node` is the kubeconfig of `system:node:<nodeName>`.
   */
  static async register(options: { readonly admin: KubeConfig; readonly node: KubeConfig; readonly nodeName: string }): Promise<PodCertificateKubelet> {
    const admin = new KubeRestClient(await connectionFromKubeConfig(options.admin));
    const node = new KubeRestClient(await connectionFromKubeConfig(options.node));
    try {
      const nodeObject = await createOrRead<V1Node>(node, corePath('nodes'), { metadata: { name: options.nodeName } }, options.nodeName).catch((e: Error) => {
        throw new Error(
          `node ${options.nodeName} could not register its Node (${e.message}); start the control plane with nodeAuthorization: true and identities: [nodeIdentity(${JSON.stringify(options.nodeName)})]`,
          { cause: e },
        );
      });
      const requests = await watchRequests(node, options.nodeName);
      return new PodCertificateKubelet(options.nodeName, nodeObject.metadata!.uid!, admin, node, requests);
    } catch (e) {
      admin.close();
      node.close();
      throw e;
    }
  }

  /**
   * Creates (as the admin) the namespace and ServiceAccount if missing, then a pod bound to this
   * node (`spec.nodeName`) with one projected volume, {@link POD_CERTIFICATE_VOLUME}: the
   * `podCertificate` source and, if given, the `clusterTrustBundle` source. Resolves once the node
   * can read the pod and its ServiceAccount, as a kubelet sees a pod only then.
   */
  async runPod(spec: PodCertificatePodSpec): Promise<KubeletPod> {
    const { namespace, name, serviceAccountName } = spec;
    await createOrRead(this.admin, corePath('namespaces'), { metadata: { name: namespace } }, namespace);
    await createOrRead(this.admin, corePath('serviceaccounts', namespace), { metadata: { name: serviceAccountName } }, serviceAccountName);
    const podCertificate: V1PodCertificateProjection = { credentialBundlePath: 'credentials.pem', ...spec.podCertificate };
    const trust = spec.clusterTrustBundle;
    await this.admin.create<V1Pod>(corePath('pods', namespace), {
      metadata: { name, namespace, labels: { ...spec.labels } },
      spec: {
        nodeName: this.nodeName,
        serviceAccountName,
        automountServiceAccountToken: false,
        containers: [
          { name: 'app', image: 'registry.invalid/app:1', volumeMounts: [{ name: POD_CERTIFICATE_VOLUME, mountPath: '/var/run/pod-certificates' }] },
        ],
        volumes: [
          {
            name: POD_CERTIFICATE_VOLUME,
            projected: {
              sources: [{ podCertificate }, ...(trust ? [{ clusterTrustBundle: { path: 'ca.crt', ...trust } }] : [])],
            },
          },
        ],
      },
    });
    const pod = await catchingUp(`node ${this.nodeName} reading pod ${namespace}/${name}`, () => this.node.get<V1Pod>(corePath('pods', namespace, name)));
    const account = await catchingUp(`node ${this.nodeName} reading ServiceAccount ${namespace}/${serviceAccountName}`, () =>
      this.node.get<V1ServiceAccount>(corePath('serviceaccounts', namespace, serviceAccountName)),
    );
    return { pod, serviceAccountUid: account.metadata!.uid! };
  }

  /**
   * Asks for a certificate for `pod` as the node does: a fresh key of the projection's keyType, a
   * stub PKCS#10 request signed with it, and a PodCertificateRequest (`generateName: req-`, owned
   * by the pod) carrying the pod's, its ServiceAccount's and this node's names and UIDs. The pod
   * may be another node's (its {@link KubeletPod} read by that node), to see NodeRestriction refuse.
   * Rejects with the apiserver's {@link KubeApiError} (403 from NodeRestriction, 422 from validation).
   */
  async requestCertificate(kubeletPod: KubeletPod, options: RequestOptions = {}): Promise<KubeletRequest> {
    const { pod, serviceAccountUid } = kubeletPod;
    const source = podCertificateSource(pod);
    const key = options.key ?? (await generateKubeletKey(options.keyType ?? (source.keyType as KubeletKeyType)));
    const der = await stubPkcs10Request(key);
    const maxExpirationSeconds = options.maxExpirationSeconds ?? source.maxExpirationSeconds;
    const body: PodCertificateRequest = {
      apiVersion: CERTIFICATES_V1,
      kind: 'PodCertificateRequest',
      metadata: {
        namespace: pod.metadata!.namespace!,
        generateName: 'req-',
        ownerReferences: [{ apiVersion: 'v1', kind: 'Pod', name: pod.metadata!.name!, uid: pod.metadata!.uid! }],
      },
      spec: {
        signerName: options.signerName ?? source.signerName,
        podName: pod.metadata!.name!,
        podUID: pod.metadata!.uid!,
        serviceAccountName: pod.spec!.serviceAccountName ?? 'default',
        serviceAccountUID: serviceAccountUid,
        nodeName: this.nodeName,
        nodeUID: this.nodeUid,
        ...(maxExpirationSeconds === undefined ? {} : { maxExpirationSeconds }),
        stubPKCS10Request: Buffer.from(options.stubRequest ? options.stubRequest(der) : der).toString('base64'),
      },
    };
    const path = podCertificateRequestsPath(body.metadata.namespace);
    const request = await catchingUp(`node ${this.nodeName} creating a PodCertificateRequest`, () => this.node.create<PodCertificateRequest>(path, body));
    return { request, key };
  }

  /**
   * Resolves when the request reaches Issued, Denied or Failed, as the node's watch sees it. No
   * time limit of its own: the test's timeout bounds it. Rejects if the request is deleted first,
   * or the kubelet is stopped.
   */
  waitForOutcome({ request }: KubeletRequest): Promise<RequestOutcome> {
    const { namespace, name } = request.metadata as { namespace: string; name: string };
    return new Promise((resolve, reject) => {
      const settle = (outcome: RequestOutcome | Error): void => {
        unsubscribe();
        this.waiters.delete(fail);
        if (outcome instanceof Error) reject(outcome);
        else resolve(outcome);
      };
      const fail = (error: Error): void => settle(error);
      const seen = (event: InformerEvent<PodCertificateRequest>): void => {
        if (event.object.metadata.namespace !== namespace || event.object.metadata.name !== name) return;
        if (event.type === 'DELETED') return settle(new Error(`PodCertificateRequest ${namespace}/${name} was deleted before it was issued, denied or failed`));
        const outcome = outcomeOf(event.object);
        if (outcome) settle(outcome);
      };
      const unsubscribe = this.requests.onChange(seen);
      this.waiters.add(fail);
      const cached = this.requests.get(namespace, name);
      if (cached) seen({ type: 'MODIFIED', object: cached });
    });
  }

  /**
   * The ClusterTrustBundles a `clusterTrustBundle` projection selects, listed as the node:
   * `spec.signerName` field selector plus the label selector. As in the kubelet, no selector
   * matches nothing and an empty one matches every bundle of the signer.
   */
  async trustBundles(signerName: string, labelSelector: V1LabelSelector | undefined): Promise<ClusterTrustBundle[]> {
    if (labelSelector === undefined) return [];
    const list = await this.node.get<ListPage<ClusterTrustBundle>>(CLUSTER_TRUST_BUNDLES_PATH, {
      fieldSelector: `spec.signerName=${signerName}`,
      labelSelector: labelSelectorQuery(labelSelector),
    });
    return list.items.filter((b) => b.spec.signerName === signerName);
  }

  /** Stops the watch (pending {@link waitForOutcome} calls reject) and closes the connections. */
  async stop(): Promise<void> {
    for (const fail of [...this.waiters]) fail(new Error(`the kubelet of node ${this.nodeName} stopped`));
    await this.requests.stop();
    this.node.close();
    this.admin.close();
  }
}

/** The pod's `podCertificate` source (in its first projected volume that has one). */
export function podCertificateSource(pod: V1Pod): V1PodCertificateProjection {
  for (const volume of pod.spec?.volumes ?? []) {
    for (const source of volume.projected?.sources ?? []) if (source.podCertificate) return source.podCertificate;
  }
  throw new Error(`pod ${pod.metadata?.namespace}/${pod.metadata?.name} mounts no podCertificate projected volume`);
}

/** A LabelSelector as the `labelSelector` query parameter (`k=v`, `k in (a,b)`, `k notin (a)`, `k`, `!k`). */
export function labelSelectorQuery(selector: V1LabelSelector): string {
  const terms = Object.entries(selector.matchLabels ?? {}).map(([k, v]) => `${k}=${v}`);
  for (const { key, operator, values = [] } of selector.matchExpressions ?? []) {
    const list = `(${values.join(',')})`;
    const term = { In: `${key} in ${list}`, NotIn: `${key} notin ${list}`, Exists: key, DoesNotExist: `!${key}` }[operator];
    if (term === undefined) throw new Error(`label selector operator ${JSON.stringify(operator)} is not one of In, NotIn, Exists, DoesNotExist`);
    terms.push(term);
  }
  return terms.join(',');
}

/** The node's informer of its PodCertificateRequests, once its first list is done (or the list's first error). */
async function watchRequests(node: KubeRestClient, nodeName: string): Promise<Informer<PodCertificateRequest>> {
  const fieldSelector = `spec.nodeName=${nodeName}`;
  let firstError: (error: Error) => void = () => undefined;
  const failed = new Promise<never>((_, reject) => (firstError = reject));
  const requests = new Informer<PodCertificateRequest>(
    {
      description: `PodCertificateRequests of node ${nodeName}`,
      resource: 'podcertificaterequests',
      list: (page) => node.get<ListPage<PodCertificateRequest>>(podCertificateRequestsPath(), { fieldSelector, ...page }),
      watchPath: podCertificateRequestsPath(),
      fieldSelector,
    },
    { watch: node, counter: node.counter, onError: (e) => firstError(e) },
  );
  requests.start();
  try {
    await Promise.race([requests.synced, failed]);
  } catch (e) {
    await requests.stop();
    throw new Error(`node ${nodeName} cannot list its PodCertificateRequests: ${(e as Error).message}`, { cause: e });
  }
  firstError = () => undefined; // later errors the informer retries by itself
  return requests;
}

/** Creates the object, or reads it if it exists already (409). */
async function createOrRead<T>(client: KubeRestClient, collection: string, body: object, name: string): Promise<T> {
  try {
    return await client.create<T>(collection, body);
  } catch (e) {
    if (e instanceof KubeApiError && e.code === 409) return client.get<T>(`${collection}/${encodeURIComponent(name)}`);
    throw e;
  }
}

/** Runs `call` again while the node's view of a fresh write is catching up (see CATCHING_UP); other errors at once. */
async function catchingUp<T>(what: string, call: () => Promise<T>): Promise<T> {
  const started = Date.now();
  for (let delayMs = 20; ; delayMs = Math.min(delayMs * 2, 500)) {
    try {
      return await call();
    } catch (e) {
      if (!(e instanceof KubeApiError && CATCHING_UP.test(e.message))) throw e;
      if (Date.now() - started > CATCH_UP_LIMIT_MS) throw new Error(`${what}: still refused after ${CATCH_UP_LIMIT_MS / 1000}s: ${e.message}`, { cause: e });
    }
    await new Promise((r) => setTimeout(r, delayMs));
  }
}
