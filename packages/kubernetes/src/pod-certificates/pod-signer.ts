import {
  type AllowedNamespaces,
  type CertificateCache,
  type CryptoBackend,
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
} from '@eso-mtls/core';
import type { V1Service } from '@kubernetes/client-node';
import { apiErrorOf } from '../client/api-error.js';
import { ITEMS_PER_TURN, type Timers, nextTurn, systemTimers } from '../runtime/clock.js';
import type { EventRecorder } from '../events/event-recorder.js';
import { Informer, type InformerOptions, type ListPage, type NotHeld } from '../informers/informer.js';
import type { PodCertificateOptions } from '../installation/installation.js';
import type { Logger } from '../runtime/logger.js';
import { OncePerWindow } from '../runtime/once-per-window.js';
import { IssuedPods } from './issued-pods.js';
import { PodReader } from './pod-cache.js';
import { PodIssuanceEvents } from './pod-events.js';
import { PodStageTimes } from './pod-stages.js';
import { type PodCertificateRequest, pendingRequest, requestView } from './pod-requests.js';
import { DEFAULT_PENDING_BOUND, NotHeldReports } from './pod-requests-not-held.js';
import { CA_UNAVAILABLE_REASON, type PodRequestOutcome, statusBody } from './pod-status.js';
import { type KubeRestClient, WriteFencedError, certificatesPath } from '../client/rest-client.js';

/** What became of one request handed to {@link PodCertificateSigner.decide}. */
export type PodRequestResult =
  /** Its status was written. */
  | 'issued'
  | 'denied'
  | 'failed'
  /** The status write did not land (409, 5xx, network, fenced), or the pod could not be read: retried with backoff. */
  | 'retry'
  /** No CA signs (the CA has no active certificate): it waits for the next CA handed over. */
  | 'waiting'
  /** No CA was handed over (one is being replaced, or the lane stopped): it waits for the next. */
  | 'withdrawn';

/** Where the signer takes its CA from, request by request (the adapter's signing lane). */
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
  /** The labelled Services (with selectors), from the adapter's cache. */
  readonly services: () => Iterable<V1Service>;
  /** With a namespace requirement: the requirement, and the namespaces that carry its label (the adapter's cache). */
  readonly namespaces?: { readonly requirement: NamespaceRequirement; readonly allowed: AllowedNamespaces };
  readonly onRequest?: PodRequestHook;
  readonly informerOptions: InformerOptions;
  /** Timers of the coalesced issuance Events and of the not-held reports (default: the process's own). */
  readonly timers?: Timers;
  /** The issuance Events' coalescing window (default 100 ms). */
  readonly issuanceEventWindowMs?: number;
}

/**
 * The signer of both signer names: watches their PodCertificateRequests (field selector on the
 * signer name), and decides one pending request at a time ({@link decide}, called by the signing
 * lane as each arrives) with the core, signs with the active CA, and writes the request's status
 * (Issued, or Denied or Failed with a reason). Pods are read from a metadata-only cache, or with
 * metadata-only GETs ({@link PodReader}). Each request is written once: the apiserver freezes its
 * status, and the request leaves the cache as it is written. The cache holds pending requests only,
 * within {@link PodCertificateOptions.pendingBound}.
 */
export class PodCertificateSigner {
  /** One informer per signer name. */
  readonly requests: ReadonlyMap<PodSignerRole, Informer<PodCertificateRequest>>;
  /** The pods we issued server certificates to, for the stale-names gauge. */
  readonly issued: IssuedPods;
  /** Pod reads: the metadata-only cache, or a GET. */
  readonly pods: PodReader;
  /** Each request's time by stage, for benchmarks. */
  readonly stages = new PodStageTimes();
  private readonly issuedEvents: PodIssuanceEvents;
  // The log lines of refusals and failed status writes: one per namespace and reason a window.
  private readonly logged: OncePerWindow;
  // The labelled Services by namespace, rebuilt after a Service changed.
  private servicesIndex: Map<string, SelectingService[]> | undefined;
  private staleCountedAt = -Infinity;
  private stale: ReadonlyMap<string, number> = new Map();
  private counting: Promise<void> | undefined;

  constructor(
    private readonly deps: PodSignerDependencies,
    readonly options: PodCertificateOptions,
  ) {
    const bound = options.pendingBound ?? DEFAULT_PENDING_BOUND;
    const timers = deps.timers ?? systemTimers;
    const notHeld = new NotHeldReports({ events: deps.events, logger: deps.logger, timers }, bound, deps.policy.reconcileInterval);
    this.logged = new OncePerWindow(deps.policy.reconcileInterval, timers);
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
          transform: pendingRequest,
          bound,
          onNotHeld: (request, scope) => notHeld.notHeld(request, scope, signer),
        },
        deps.informerOptions,
      );
    };
    this.requests = new Map([
      ['server', informer(options.serverSignerName)],
      ['client', informer(options.clientSignerName)],
    ]);
    this.issued = new IssuedPods();
    this.pods = new PodReader({ api: deps.api, informerOptions: deps.informerOptions, logger: deps.logger });
    this.issuedEvents = new PodIssuanceEvents(deps.events, deps.issuanceEventWindowMs, deps.timers);
  }

  /** Call on every change of a labelled Service: the next decision reads the Services again, and the pod cache follows their namespaces. */
  servicesChanged(namespace: string): void {
    this.servicesIndex = undefined;
    this.pods.follow(namespace);
  }

  /** Caches the pods of the namespaces with labelled Services and of ESO's, and only those. */
  followPods(): void {
    const namespaces = new Set(this.services().keys());
    namespaces.add(this.deps.policy.esoNamespace);
    this.pods.retain(namespaces);
  }

  /** Records the waiting issuance Events and stops the pod cache (the adapter stopping). */
  async stop(): Promise<void> {
    this.issuedEvents.flush();
    await this.pods.stop();
  }

  /** Resolves once the issuances so far have their Events sent: the waiting batches too, as the last request finishes (benchmarks). */
  issuanceEventsSent(): Promise<void> {
    return this.issuedEvents.whenSent();
  }

  /**
   * Every request the cache holds (all pending), with its role: what a resync queues. The walk
   * yields the event loop every few hundred requests; a request cached meanwhile is walked too.
   */
  async *pending(): AsyncIterable<{ readonly role: PodSignerRole; readonly request: PodCertificateRequest }> {
    let walked = 0;
    for (const [role, informer] of this.requests) {
      // The cache's own iterator: entries added while the walk waits for its turn are visited.
      for (const request of informer.list()) {
        if (++walked % ITEMS_PER_TURN === 0) await nextTurn();
        yield { role, request };
      }
    }
  }

  /** Pending requests the bound keeps out of memory now, per scope, both signers together. */
  notHeld(): NotHeld {
    const total = { namespace: 0, total: 0 };
    for (const informer of this.requests.values()) {
      const n = informer.notHeld;
      total.namespace += n.namespace;
      total.total += n.total;
    }
    return total;
  }

  /** The signer name of a role. */
  signerName(role: PodSignerRole): string {
    return role === 'server' ? this.options.serverSignerName : this.options.clientSignerName;
  }

  /**
   * Decides one request with the CA `signing` holds now (`active` signs), and writes its status.
   * Never throws for the request's own failure (an unreadable pod, a status write that did not
   * land: 'retry'); a CA key that stopped answering throws.
   */
  async decide(role: PodSignerRole, request: PodCertificateRequest, signing: SigningCa, clock: () => Instant): Promise<PodRequestResult> {
    const result = await signing.withCa(async (ca): Promise<PodRequestResult> => {
      if (!ca.active) return 'waiting';
      const outcome = await this.sign(request, role, this.services().get(request.metadata?.namespace ?? '') ?? [], ca, clock);
      // An unreadable pod is retried like a status write that did not land.
      return outcome === undefined ? 'retry' : this.write(request, role, outcome, clock);
    });
    return result ?? 'withdrawn';
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
      this.stale = await this.issued.staleNames(now, (namespace, name) => this.pods.get(namespace, name), services, this.deps.policy.clusterDomain);
    } catch (e) {
      this.deps.logger.warn({ error: apiErrorOf(e).message }, 'counting pods with stale certificate names failed; retrying next interval');
    }
  }

  /** Per namespace, pods whose certificate names no longer match their Services (the last count). */
  staleNamesByNamespace(): ReadonlyMap<string, number> {
    return this.stale;
  }

  /** The outcome for one request, or undefined when the pod could not be read (retried with backoff). */
  private async sign(
    request: PodCertificateRequest,
    role: PodSignerRole,
    services: readonly SelectingService[],
    ca: MaterializedCa,
    clock: () => Instant,
  ): Promise<(PodRequestOutcome & { decision?: PodRequestDecision }) | undefined> {
    const view = requestView(request, role);
    let pod: PodMetadataView | undefined;
    const reading = performance.now();
    try {
      pod = (await this.pods.read(view.namespace, view.podName, view.podUid)).pod;
    } catch (e) {
      this.deps.logger.warn(
        { namespace: view.namespace, pod: view.podName, error: apiErrorOf(e).message },
        'reading the pod of a certificate request failed; retrying',
      );
      return undefined;
    }
    const signing = performance.now();
    this.stages.record('podRead', signing - reading);
    try {
      const namespaces = this.deps.namespaces;
      const allowance = namespaces && { namespaceRequirement: namespaces.requirement, namespaceAllowed: namespaces.allowed.has(view.namespace) };
      const decision = decidePodRequest({ request: view, pod, services, policy: this.deps.policy, ...allowance });
      if (decision.kind === 'deny') return { kind: 'Denied', reason: decision.reason, message: decision.message, decision };
      const issued = await issuePodCertificate({ crypto: this.deps.crypto, policy: this.deps.policy, now: clock() }, ca.active!, decision, {
        maxExpirationSeconds: view.maxExpirationSeconds,
        maxValidity: this.options.maxValidity,
      });
      if (!issued.ok) return { kind: 'Failed', reason: CA_UNAVAILABLE_REASON, message: issued.detail, decision };
      return { kind: 'Issued', certificate: issued, decision };
    } finally {
      this.stages.record('sign', performance.now() - signing);
    }
  }

  /** The labelled Services by namespace, from the adapter's cache (rebuilt after a change). */
  private services(): Map<string, SelectingService[]> {
    return (this.servicesIndex ??= servicesByNamespace(this.deps.services()));
  }

  /** Writes the status and accounts for it: one Event on the pod, one hook call, one log line on failure. */
  private async write(
    request: PodCertificateRequest,
    role: PodSignerRole,
    outcome: PodRequestOutcome & { decision?: PodRequestDecision },
    clock: () => Instant,
  ): Promise<PodRequestResult> {
    const namespace = request.metadata?.namespace ?? '';
    const name = request.metadata?.name ?? '';
    const podName = request.spec?.podName ?? '';
    const pod = { kind: 'Pod' as const, namespace, name: podName, uid: request.spec?.podUID };
    const signer = this.signerName(role);
    const writing = performance.now();
    try {
      const stored = await this.deps.api.replace<PodCertificateRequest>(
        `${certificatesPath('podcertificaterequests', namespace, name)}/status`,
        statusBody(request, outcome, clock()),
      );
      // Decided: it leaves the cache now, before its watch event, so it is never decided twice.
      this.requests.get(role)!.cacheAhead(stored);
      this.stages.record('statusWrite', performance.now() - writing);
    } catch (e) {
      if (e instanceof WriteFencedError) return 'retry';
      const error = apiErrorOf(e);
      // 409: another writer (or our earlier write) moved it on; it is read again from the cache when retried.
      if (error.code !== 409 && error.code !== 404) {
        if (this.logged.first(`write ${namespace} ${signer} ${error.code ?? error.message}`)) {
          this.deps.logger.warn(
            { namespace, pod: podName, request: name, signer, error: error.message },
            'writing a pod certificate request status failed; retrying (more such failures in this namespace are counted, and not logged for a reconcile interval)',
          );
        }
        this.deps.events.record(pod, 'Warning', 'PodCertificateFailed', `writing the status of PodCertificateRequest ${name} failed: ${error.message}`);
        this.deps.onRequest?.(role, 'failed', 'StatusWriteFailed', namespace);
      }
      return 'retry';
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
      // Coalesced: one Event per selecting Service (the client's: per pod) and short window, not one per pod.
      const about = role === 'server' && services.length > 0 ? { namespace, name: services[0]! } : pod;
      this.issuedEvents.issued(about, signer, podName, services, certificate.notAfter);
      this.deps.onRequest?.(role, 'issued', 'Issued', namespace);
      return 'issued';
    }
    const result = outcome.kind === 'Denied' ? 'denied' : 'failed';
    // Every refusal has its Event on the pod and its count; the log has the first per namespace and reason a window.
    if (this.logged.first(`${result} ${namespace} ${signer} ${outcome.reason}`)) {
      this.deps.logger.warn(
        { namespace, pod: podName, request: name, signer, reason: outcome.reason, message: outcome.message },
        `pod certificate request ${result}; more in this namespace for this reason are counted (eso_pod_certificate_requests_total) and not logged for a reconcile interval`,
      );
    }
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
