import {
  type AllowedNamespaces,
  type CertificateCache,
  type ConcurrencyLimit,
  type CryptoBackend,
  type Duration,
  type Instant,
  type MaterializedCa,
  type NamespaceRequirement,
  type PodMetadataView,
  type PodRequestDecision,
  type PodSignerRole,
  type Policy,
  type SelectingService,
  decidePodRequest,
  issuePodCertificate,
  shownList,
} from '@eso-mtls/core';
import type { V1Service } from '@kubernetes/client-node';
import { apiErrorOf } from './api-error.js';
import type { EventRecorder } from './event-recorder.js';
import { Informer, type InformerOptions, type ListPage } from './informer.js';
import type { Logger } from './logger.js';
import { IssuedPods } from './issued-pods.js';
import { type PodCertificateRequest, isPending, requestView, trimPodRequest } from './pod-requests.js';
import { CA_UNAVAILABLE_REASON, type PodRequestOutcome, statusBody } from './pod-status.js';
import { type KubeRestClient, WriteFencedError, certificatesPath, corePath } from './rest-client.js';

/** The pod-certificate mode's settings. */
export interface PodCertificateOptions {
  /** Signer of provider server certificates, e.g. `eso-mtls.io/provider-server`. */
  readonly serverSignerName: string;
  /** Signer of ESO core's client certificate, e.g. `eso-mtls.io/eso-client`. */
  readonly clientSignerName: string;
  /** The longest certificate issued; a request's maxExpirationSeconds is clamped to it. */
  readonly maxValidity: Duration;
}

/** What one signing pass did. */
export interface PodSigningResult {
  readonly issued: number;
  readonly denied: number;
  /** Failed on purpose (no CA can sign what the apiserver accepts). */
  readonly failed: number;
  /** Status writes that did not land (409, 5xx, network) and pods that could not be read: retried with backoff. */
  readonly errors: number;
  /** Pending requests left for a CA that signs (the CA has no active certificate). */
  readonly waiting: number;
}

/** Where a signing pass takes its CA from, request by request (the adapter's signing lane). */
export interface SigningCa {
  /** Runs `sign` with the CA that signs now; undefined, without calling it, while there is none. */
  withCa<T>(sign: (ca: MaterializedCa) => Promise<T>): Promise<T | undefined>;
}

/** Called once per decided request, for metrics. */
export type PodRequestHook = (signer: PodSignerRole, result: 'issued' | 'denied' | 'failed', reason: string, namespace: string) => void;

/** What the signer needs from the adapter. */
export interface PodSignerDependencies {
  readonly api: KubeRestClient;
  readonly policy: Policy;
  readonly crypto: CryptoBackend;
  readonly cache: CertificateCache;
  readonly events: EventRecorder;
  readonly logger: Logger;
  /** The signer's own bound on requests in flight: Secret writes have theirs, so neither queues behind the other. */
  readonly limiter: ConcurrencyLimit;
  /** The labelled Services (with selectors), from the adapter's cache. */
  readonly services: () => Iterable<V1Service>;
  /** With a namespace requirement: the requirement, and the namespaces that carry its label (the adapter's cache). */
  readonly namespaces?: { readonly requirement: NamespaceRequirement; readonly allowed: AllowedNamespaces };
  readonly onRequest?: PodRequestHook;
  readonly informerOptions: InformerOptions;
}

/** `Accept` of a metadata-only read: the apiserver answers with PartialObjectMetadata, never the pod's spec. */
const METADATA_ONLY = 'application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1';

/**
 * The signer of both signer names: watches their PodCertificateRequests (field selector on the
 * signer name), and on each reconcile decides every pending one with the core, signs with the
 * active CA, and writes the request's status (Issued, or Denied or Failed with a reason). Pods are
 * read with metadata-only GETs. Each request is written once: the apiserver freezes its status.
 */
export class PodCertificateSigner {
  /** One informer per signer name. */
  readonly requests: ReadonlyMap<PodSignerRole, Informer<PodCertificateRequest>>;
  /** The pods we issued server certificates to, for the stale-names gauge. */
  readonly issued: IssuedPods;
  // Requests whose status we wrote, by uid, until the cache shows it (resourceVersion written against).
  private readonly written = new Map<string, string>();
  private staleCountedAt = -Infinity;
  private stale: ReadonlyMap<string, number> = new Map();
  private counting: Promise<void> | undefined;

  constructor(
    private readonly deps: PodSignerDependencies,
    readonly options: PodCertificateOptions,
  ) {
    const informer = (signer: string): Informer<PodCertificateRequest> => {
      const path = certificatesPath('podcertificaterequests');
      const fieldSelector = `spec.signerName=${signer}`;
      return new Informer<PodCertificateRequest>(
        {
          description: `PodCertificateRequests for signer ${signer}`,
          resource: 'podcertificaterequests',
          list: (page) => deps.api.get<ListPage<PodCertificateRequest>>(path, { fieldSelector, ...page }),
          watchPath: path,
          fieldSelector,
          transform: trimPodRequest,
        },
        deps.informerOptions,
      );
    };
    this.requests = new Map([
      ['server', informer(options.serverSignerName)],
      ['client', informer(options.clientSignerName)],
    ]);
    this.issued = new IssuedPods();
  }

  /** The signer name of a role. */
  signerName(role: PodSignerRole): string {
    return role === 'server' ? this.options.serverSignerName : this.options.clientSignerName;
  }

  /**
   * Decides every pending request, each with the CA `signing` holds when its turn comes (`active`
   * signs); a request met while it holds none waits for the next pass. Never throws for one
   * request's failure.
   */
  async signPending(signing: SigningCa, clock: () => Instant, writesAllowed: () => boolean): Promise<PodSigningResult> {
    const counts = { issued: 0, denied: 0, failed: 0, errors: 0, waiting: 0 };
    const services = servicesByNamespace(this.deps.services());
    const tasks: Promise<void>[] = [];
    const listed = new Set<string>();
    for (const [role, informer] of this.requests) {
      for (const request of informer.list()) {
        listed.add(request.metadata?.uid ?? '');
        if (!isPending(request)) {
          // Decided: its status is frozen, so our write need not be remembered any longer.
          this.written.delete(request.metadata?.uid ?? '');
          continue;
        }
        if (this.alreadyWritten(request)) continue;
        tasks.push(
          this.deps.limiter.run(async () => {
            if (!writesAllowed()) return;
            const result = await signing.withCa(async (ca) => {
              if (!ca.active) return 'waiting';
              const outcome = await this.sign(request, role, services.get(request.metadata?.namespace ?? '') ?? [], ca, clock());
              // An unreadable pod is retried like a status write that did not land.
              return outcome === undefined ? 'errors' : this.write(request, role, outcome, clock);
            });
            // No CA handed over (one is being replaced, or the lane stopped): the next pass takes it.
            if (result !== undefined) counts[result]++;
          }),
        );
      }
    }
    // Requests deleted (with their pods) are forgotten too: `written` is bounded by the cache.
    for (const uid of this.written.keys()) if (!listed.has(uid)) this.written.delete(uid);
    // The pass ends with its last request, also when one threw (a CA key that stopped answering):
    // the lane's next pass must not meet requests this one is still signing.
    const failure = (await Promise.allSettled(tasks)).find((r) => r.status === 'rejected');
    if (failure) throw failure.reason;
    if (counts.waiting > 0) this.deps.logger.info({ requests: counts.waiting }, 'pod certificate requests wait for a CA that signs');
    return counts;
  }

  /**
   * Starts a recount, at most once per reconcile interval and one at a time, of the pods serving
   * names that no longer match (one metadata GET per tracked pod, one after the other). It runs in
   * the background: a recount of thousands of pods takes seconds, and signing must not wait for it.
   */
  refreshStaleNames(now: Instant): void {
    if (this.counting !== undefined || now - this.staleCountedAt < this.deps.policy.reconcileInterval) return;
    this.staleCountedAt = now;
    this.counting = this.countStaleNames(now).finally(() => (this.counting = undefined));
  }

  /** Resolves once no recount is running (the adapter awaits it before closing its connections). */
  async settled(): Promise<void> {
    await this.counting;
  }

  private async countStaleNames(now: Instant): Promise<void> {
    try {
      const services = servicesByNamespace(this.deps.services());
      this.stale = await this.issued.staleNames(now, (namespace, name) => this.podMetadata(namespace, name), services, this.deps.policy.clusterDomain);
    } catch (e) {
      this.deps.logger.warn({ error: apiErrorOf(e).message }, 'counting pods with stale certificate names failed; retrying next interval');
    }
  }

  /** Per namespace, pods whose certificate names no longer match their Services (the last count). */
  staleNamesByNamespace(): ReadonlyMap<string, number> {
    return this.stale;
  }

  private alreadyWritten(request: PodCertificateRequest): boolean {
    const uid = request.metadata?.uid ?? '';
    const at = this.written.get(uid);
    if (at === undefined) return false;
    // The cache still shows the version we wrote against: our write's event has not arrived yet.
    if (at === request.metadata?.resourceVersion) return true;
    this.written.delete(uid);
    return false;
  }

  /** The outcome for one request, or undefined when the pod could not be read (retried with backoff). */
  private async sign(
    request: PodCertificateRequest,
    role: PodSignerRole,
    services: readonly SelectingService[],
    ca: MaterializedCa,
    now: Instant,
  ): Promise<(PodRequestOutcome & { decision?: PodRequestDecision }) | undefined> {
    const view = requestView(request, role);
    let pod: PodMetadataView | undefined;
    try {
      pod = await this.podMetadata(view.namespace, view.podName);
    } catch (e) {
      this.deps.logger.warn(
        { namespace: view.namespace, pod: view.podName, error: apiErrorOf(e).message },
        'reading the pod of a certificate request failed; retrying',
      );
      return undefined;
    }
    const namespaces = this.deps.namespaces;
    const allowance = namespaces && { namespaceRequirement: namespaces.requirement, namespaceAllowed: namespaces.allowed.has(view.namespace) };
    const decision = decidePodRequest({ request: view, pod, services, policy: this.deps.policy, ...allowance });
    if (decision.kind === 'deny') return { kind: 'Denied', reason: decision.reason, message: decision.message, decision };
    const issued = await issuePodCertificate({ crypto: this.deps.crypto, policy: this.deps.policy, now }, ca.active!, decision, {
      maxExpirationSeconds: view.maxExpirationSeconds,
      maxValidity: this.options.maxValidity,
    });
    if (!issued.ok) return { kind: 'Failed', reason: CA_UNAVAILABLE_REASON, message: issued.detail, decision };
    return { kind: 'Issued', certificate: issued, decision };
  }

  private async podMetadata(namespace: string, name: string): Promise<PodMetadataView | undefined> {
    if (namespace === '' || name === '') return undefined;
    try {
      const pod = await this.deps.api.request<{ metadata?: { uid?: string; labels?: Record<string, string> } }>('GET', corePath('pods', namespace, name), {
        accept: METADATA_ONLY,
      });
      return { uid: pod.metadata?.uid ?? '', labels: pod.metadata?.labels ?? {} };
    } catch (e) {
      if (apiErrorOf(e).code === 404) return undefined;
      throw e;
    }
  }

  /** Writes the status and accounts for it: one Event on the pod, one hook call, one log line on failure. */
  private async write(
    request: PodCertificateRequest,
    role: PodSignerRole,
    outcome: PodRequestOutcome & { decision?: PodRequestDecision },
    clock: () => Instant,
  ): Promise<'issued' | 'denied' | 'failed' | 'errors'> {
    const namespace = request.metadata?.namespace ?? '';
    const name = request.metadata?.name ?? '';
    const podName = request.spec?.podName ?? '';
    const pod = { kind: 'Pod' as const, namespace, name: podName, uid: request.spec?.podUID };
    const signer = this.signerName(role);
    try {
      const stored = await this.deps.api.replace<PodCertificateRequest>(
        `${certificatesPath('podcertificaterequests', namespace, name)}/status`,
        statusBody(request, outcome, clock()),
      );
      this.written.set(request.metadata?.uid ?? '', request.metadata?.resourceVersion ?? '');
      this.requests.get(role)!.cacheAhead(stored);
    } catch (e) {
      if (e instanceof WriteFencedError) return 'errors';
      const error = apiErrorOf(e);
      // 409: another writer (or our earlier write) moved it on; the next round reads it again.
      if (error.code !== 409 && error.code !== 404) {
        this.deps.logger.warn(
          { namespace, pod: podName, request: name, signer, error: error.message },
          'writing a pod certificate request status failed; retrying',
        );
        this.deps.events.record(pod, 'Warning', 'PodCertificateFailed', `writing the status of PodCertificateRequest ${name} failed: ${error.message}`);
        this.deps.onRequest?.(role, 'failed', 'StatusWriteFailed', namespace);
      }
      return 'errors';
    }
    if (outcome.kind === 'Issued') {
      const { certificate, decision } = outcome;
      const services = decision?.kind === 'issue' ? decision.services : [];
      if (role === 'server')
        this.issued.record({
          namespace,
          podName,
          podUid: request.spec?.podUID ?? '',
          dnsNames: certificate.certificate.dnsNames,
          notAfter: certificate.notAfter,
        });
      const about = role === 'server' ? `Services ${shownList(services)}` : 'ESO core (client)';
      this.deps.events.record(
        pod,
        'Normal',
        'PodCertificateIssued',
        `issued a certificate for ${about} from ${signer} (request ${name}); valid until ${new Date(certificate.notAfter).toISOString()}, refresh from ${new Date(certificate.beginRefreshAt).toISOString()}`,
      );
      this.deps.onRequest?.(role, 'issued', 'Issued', namespace);
      return 'issued';
    }
    const result = outcome.kind === 'Denied' ? 'denied' : 'failed';
    this.deps.logger.warn(
      { namespace, pod: podName, request: name, signer, reason: outcome.reason, message: outcome.message },
      `pod certificate request ${result}`,
    );
    this.deps.events.record(
      pod,
      'Warning',
      outcome.kind === 'Denied' ? 'PodCertificateDenied' : 'PodCertificateFailed',
      `${outcome.reason}: ${outcome.message}`,
    );
    this.deps.onRequest?.(role, result, outcome.reason, namespace);
    return result;
  }
}

/** The labelled Services with their selectors, by namespace. */
function servicesByNamespace(services: Iterable<V1Service>): Map<string, SelectingService[]> {
  const byNamespace = new Map<string, SelectingService[]>();
  for (const s of services) {
    const namespace = s.metadata?.namespace;
    const name = s.metadata?.name;
    if (!namespace || !name) continue;
    let list = byNamespace.get(namespace);
    if (!list) byNamespace.set(namespace, (list = []));
    list.push({ name, ...(s.spec?.selector ? { selector: s.spec.selector } : {}), ...(s.spec?.type ? { type: s.spec.type } : {}) });
  }
  return byNamespace;
}
