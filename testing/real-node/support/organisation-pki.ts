// The organisation's PKI beside the real node, as a platform team runs it: a root made by the openssl
// CLI, cert-manager's controller (the tests build, a host process against the cluster's apiserver)
// with a CA ClusterIssuer holding that root, and the trust anchors input in ESO's namespace.
import { CustomObjectsApi, PatchStrategy, type V1Secret, setHeaderOptions } from '@kubernetes/client-node';
import { ESO_NS } from '@eso-mtls/test-kit/cluster';
import { eventually } from '@eso-mtls/test-kit/eventually';
import {
  type CertManagerOptions,
  type CertManagerPlane,
  type RunningCertManager,
  installCertManagerCrds,
  startCertManager,
} from '@eso-mtls/test-kit/cert-manager-process';
import type { Values } from '@eso-mtls/test-kit/helm';
import { applyAll } from '@eso-mtls/test-kit/manifests';
import { opensslP256Ca } from '@eso-mtls/test-kit/pod-certificates';
import type { KeyPair } from '@eso-mtls/test-kit/pki';
import { type ChainVerdict, opensslVerifyChain } from '@eso-mtls/test-kit/upstream-pki';
import type { World } from './world.js';

/** The ClusterIssuer (and its Secret in cert-manager's cluster resource namespace). */
export const ORG_ISSUER = 'org-ca';
/** The Secret in ESO's namespace holding the anchors, key `ca.crt`. */
export const ORG_ANCHORS = 'org-roots';
const CLUSTER_RESOURCES = 'kube-system';
/** A long-lived root, as an organisation's is: the intermediate gets the chart's default validity (365 days). */
const ROOT_DAYS = 3650;

const REQUESTS = { group: 'cert-manager.io', version: 'v1', plural: 'certificaterequests' } as const;

type Conditions = { status?: { conditions?: { type: string; status: string }[] } };

/** The organisation root, its ClusterIssuer and cert-manager; {@link OrganisationPki.start} makes them. */
export class OrganisationPki {
  private constructor(
    private readonly w: World,
    /** The root the ClusterIssuer signs with now. */
    public root: KeyPair,
    /** Every root published in the anchors input, oldest first. */
    public anchors: readonly KeyPair[],
    public certManager: RunningCertManager,
  ) {}

  /** cert-manager's CRDs, the process, a new root in a Ready ClusterIssuer, and the anchors Secret holding it. */
  static async start(w: World, options: CertManagerOptions = {}): Promise<OrganisationPki> {
    const plane = certManagerPlane(w);
    await installCertManagerCrds(plane);
    const root = await opensslP256Ca('eso-mtls real-node organisation root', ROOT_DAYS);
    const pki = new OrganisationPki(w, root, [root], await startCertManager(plane, options));
    await pki.publish();
    await applyAll(w.admin, [
      { apiVersion: 'cert-manager.io/v1', kind: 'ClusterIssuer', metadata: { name: ORG_ISSUER }, spec: { ca: { secretName: ORG_ISSUER } } },
    ]);
    await pki.issuerReady();
    return pki;
  }

  /** The chart's `ca` values for this PKI: the ClusterIssuer, the anchors Secret. */
  chartValues(): Values {
    return {
      ca: {
        source: 'issuer',
        issuer: { kind: 'ClusterIssuer', name: ORG_ISSUER },
        trustAnchors: { kind: 'Secret', name: ORG_ANCHORS, key: 'ca.crt' },
      },
    };
  }

  /** `openssl verify -x509_strict` of a chain (leaf first) with only the current root trusted, for `purpose`. */
  verify(chainPem: string, purpose?: 'sslserver' | 'sslclient'): ChainVerdict {
    return opensslVerifyChain(this.root.cert, chainPem, purpose);
  }

  /**
   * The organisation rotates its root: the new one is published in the anchors input beside the
   * old (as docs/chaining-to-your-pki.md asks, before the issuer signs with it), then the
   * ClusterIssuer signs with it.
   */
  async rotateRoot(): Promise<void> {
    this.root = await opensslP256Ca(`eso-mtls real-node organisation root ${this.anchors.length + 1}`, ROOT_DAYS);
    this.anchors = [...this.anchors, this.root];
    await this.publish();
    await this.issuerReady();
  }

  /** Restarts cert-manager with `options` (e.g. without its approver, as a policy approver replaces it). */
  async restartCertManager(options: CertManagerOptions): Promise<void> {
    await this.certManager.stop();
    this.certManager = await startCertManager(certManagerPlane(this.w), options);
  }

  /** True when the CertificateRequest exists. */
  async requestExists(namespace: string, name: string): Promise<boolean> {
    return (await this.readRequest(namespace, name)) !== undefined;
  }

  /** True when the CertificateRequest exists and no approver has decided it yet. */
  async requestPending(namespace: string, name: string): Promise<boolean> {
    const request = await this.readRequest(namespace, name);
    return request !== undefined && !(request.status?.conditions ?? []).some((c) => c.type === 'Approved' || c.type === 'Denied');
  }

  /** Deletes a CertificateRequest and resolves once it is gone. */
  async deleteRequest(namespace: string, name: string): Promise<void> {
    await this.requests().deleteNamespacedCustomObject({ ...REQUESTS, namespace, name });
    await eventually(async () => !(await this.requestExists(namespace, name)), 60_000, `CertificateRequest ${namespace}/${name} gone`);
  }

  /** Sets `Approved` or `Denied` on a CertificateRequest, as a policy approver does (cert-manager then issues, or never does). */
  async decide(namespace: string, name: string, type: 'Approved' | 'Denied', message: string): Promise<void> {
    const condition = { type, status: 'True', reason: 'eso-mtls.io/real-node-approver', message, lastTransitionTime: new Date().toISOString() };
    await this.requests().patchNamespacedCustomObjectStatus(
      { ...REQUESTS, namespace, name, body: { status: { conditions: [condition] } } },
      setHeaderOptions('Content-Type', PatchStrategy.MergePatch),
    );
  }

  private requests(): CustomObjectsApi {
    return this.w.admin.makeApiClient(CustomObjectsApi);
  }

  private async readRequest(namespace: string, name: string): Promise<Conditions | undefined> {
    return (this.requests().getNamespacedCustomObject({ ...REQUESTS, namespace, name }) as Promise<Conditions>).catch((e: { code?: number }) => {
      if (e.code === 404) return undefined;
      throw e;
    });
  }

  async stop(): Promise<void> {
    await this.certManager.stop();
  }

  /** The anchors Secret, and the ClusterIssuer's Secret with the current root and its key. */
  private async publish(): Promise<void> {
    const b64 = (s: string): string => Buffer.from(s).toString('base64');
    const secrets: (V1Secret & { metadata: { name: string; namespace: string } })[] = [
      {
        apiVersion: 'v1',
        kind: 'Secret',
        metadata: { name: ORG_ANCHORS, namespace: ESO_NS },
        data: { 'ca.crt': b64(this.anchors.map((a) => a.cert).join('')) },
      },
      {
        apiVersion: 'v1',
        kind: 'Secret',
        metadata: { name: ORG_ISSUER, namespace: CLUSTER_RESOURCES },
        type: 'kubernetes.io/tls',
        data: { 'tls.crt': b64(this.root.cert), 'tls.key': b64(this.root.key) },
      },
    ];
    for (const secret of secrets) {
      const current = await this.w.objects.read(secret).catch((e: { code?: number }) => {
        if (e.code === 404) return undefined;
        throw e;
      });
      if (current) await this.w.objects.replace({ ...secret, metadata: { ...secret.metadata, resourceVersion: current.metadata?.resourceVersion } });
      else await this.w.objects.create(secret);
    }
  }

  private async issuerReady(): Promise<void> {
    await eventually(
      async () => {
        const issuer = (await this.w.objects.read({ apiVersion: 'cert-manager.io/v1', kind: 'ClusterIssuer', metadata: { name: ORG_ISSUER } })) as Conditions;
        return issuer.status?.conditions?.some((c) => c.type === 'Ready' && c.status === 'True') ?? false;
      },
      120_000,
      `ClusterIssuer ${ORG_ISSUER} Ready`,
    );
  }
}

/** The real cluster's control plane as cert-manager runs against it: the admin's kubeconfig file the World wrote. */
function certManagerPlane(w: World): CertManagerPlane {
  return { dir: w.tc.cluster.controlPlane.dir, adminKubeConfig: w.admin, identity: () => ({ kubeconfigPath: w.kubeconfigPath }) };
}
