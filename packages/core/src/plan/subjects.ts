import { truncate, truncateList } from '../common/truncate.js';
import type { Instant } from '../common/time.js';
import { type NamespaceRequirement, notAllowedMessage } from '../policy/namespace-requirement.js';
import type { LeafIdentity } from '../policy/rules.js';
import { MAX_DNS_NAME_BYTES, fitServiceNames } from '../x509/name-budget.js';
import { CLIENT_COMMON_NAME, InvalidNameError, PROVIDER_LABEL, clientSpiffeId, serviceDnsNames } from '../x509/names.js';
import { capNamespaces } from './issuance-order.js';
import { type ObservedLeafSecret, observeLeafSecret } from '../secret/observe.js';
import {
  ROTATE_ACKNOWLEDGED_ANNOTATION,
  namespaceRotationRequest,
  pendingRotationRequests,
  rotateRequestProblem,
  secretAcknowledgement,
  secretRotationRequest,
} from '../secret/rotate-request.js';
import type { ProviderNamespace, ProviderService, SecretState, Snapshot, WriteRefusal } from '../secret/snapshot.js';
import type { SecretTarget } from '../secret/target.js';
import type { Conflict, ExcludedNamespace, PlanContext, RefusedService } from './vocabulary.js';

/*
 * The first step of a plan: who it is about. The client and every provider namespace become leaf
 * subjects, or are left out (excluded, in conflict) with the reason; Services whose request or names
 * cannot be honoured are refused. Each function returns what it found rather than adding to lists its
 * caller holds, so each step can be read, and tested, on its own.
 */

/** One leaf Secret as the planner sees it. */
export interface LeafSubject {
  readonly target: SecretTarget;
  /** For messages: `the client certificate`, `namespace team-a`. */
  readonly label: string;
  readonly kind: 'serverLeaf' | 'clientLeaf';
  readonly services: readonly string[];
  readonly promptedBy: readonly string[];
  readonly secret?: SecretState;
  readonly observed?: ObservedLeafSecret;
  readonly previouslyIssued: boolean;
  readonly identity: LeafIdentity;
  readonly request?: string;
  readonly forcedBy?: string;
  /** Its oldest labelled Service's creationTimestamp (namespaces only), if known. */
  readonly since?: Instant;
  /** Namespaces only: the adapter's writes to its Secret are refused (see ProviderNamespace.writesRefused). */
  readonly writesRefused?: WriteRefusal;
}

/** The subjects of a plan (the client first, then namespaces by name), and what is left out and why. */
export interface Subjects {
  readonly subjects: readonly LeafSubject[];
  readonly conflicts: readonly Conflict[];
  readonly refused: readonly RefusedService[];
  readonly excluded: readonly ExcludedNamespace[];
}

/** The leaf Secrets a plan keeps, with the conflicts, refusals and exclusions met on the way. */
export function collectSubjects(snapshot: Snapshot, ctx: PlanContext): Subjects {
  const client = clientSubject(snapshot, ctx);
  const judged = snapshot.namespaces.map((ns) => judgeNamespace(ns, ctx));
  const capped = capNamespaces(
    judged.flatMap(({ candidate: c }) =>
      c === undefined
        ? []
        : [{ item: c, namespace: c.ns.namespace, served: c.ns.secret?.ownership === 'managed' || c.ns.previouslyIssued, since: oldestService(c.valid) }],
    ),
    ctx.maxNamespaces,
  );
  const served = capped.served.map((c) => namespaceSubject(c, ctx));
  return {
    subjects: [...(client.subject ? [client.subject] : []), ...served.map((s) => s.subject)],
    conflicts: [...client.conflicts, ...judged.flatMap((j) => j.conflicts)],
    refused: served.flatMap((s) => s.refused),
    excluded: [...judged.flatMap((j) => j.excluded), ...capped.left.map((c) => cappedNamespace(c, ctx.maxNamespaces))],
  };
}

/** The client Secret as a subject, or its conflict when it is not ours. */
function clientSubject(snapshot: Snapshot, { policy, cache }: PlanContext): { subject?: LeafSubject; conflicts: Conflict[] } {
  const client = snapshot.clientSecret;
  if (client?.ownership === 'foreign')
    return { conflicts: [{ target: 'client', services: [], message: 'the client Secret exists but was not written by this installation; it is left alone' }] };
  const request = secretRotationRequest(client);
  const subject: LeafSubject = {
    target: 'client',
    label: 'the client certificate',
    kind: 'clientLeaf',
    services: [],
    promptedBy: [],
    secret: client,
    previouslyIssued: snapshot.clientPreviouslyIssued ?? false,
    observed: client?.ownership === 'managed' ? observeLeafSecret(client.data, cache) : undefined,
    identity: { kind: 'client', uri: clientSpiffeId(policy.clusterDomain, policy.esoNamespace, policy.serviceAccount), commonName: CLIENT_COMMON_NAME },
    request: request === undefined ? undefined : secretAcknowledgement(request),
    forcedBy: request === undefined ? undefined : `the client Secret's annotation eso-mtls.io/rotate (${truncate(request, 64)})`,
  };
  return { subject, conflicts: [] };
}

/** A namespace that asks to be served, before the cap on namespaces: its Services with valid names. */
interface Candidate {
  readonly ns: ProviderNamespace;
  readonly valid: readonly ProviderService[];
}

/** One namespace judged on its own: a candidate to serve, or excluded, or in conflict (or nothing to do). */
function judgeNamespace(ns: ProviderNamespace, ctx: PlanContext): { candidate?: Candidate; excluded: ExcludedNamespace[]; conflicts: Conflict[] } {
  const notAllowed = notAllowedNamespace(ns, ctx.namespaceRequirement);
  if (notAllowed) return { excluded: [notAllowed], conflicts: [] };
  const { valid, conflicts } = validServices(ns.namespace, ns.services, ctx.policy.clusterDomain);
  // A namespace without labelled Services is left alone: not renewed, no bundle, no say in retiring a CA.
  if (valid.length === 0) return { excluded: [], conflicts };
  if (ns.secret?.ownership === 'foreign') {
    const conflict: Conflict = {
      target: { namespace: ns.namespace },
      services: valid.map((s) => s.name),
      message: `namespace ${ns.namespace}: Secret external-secrets-provider-tls exists but was not written by this installation; it is left alone`,
    };
    return { excluded: [], conflicts: [...conflicts, conflict] };
  }
  return { candidate: { ns, valid }, excluded: [], conflicts };
}

/**
 * A namespace with labelled Services that lacks the required label, left out before anything else
 * is judged (its Service names and Secret included); undefined when it is served or has no
 * labelled Service.
 */
function notAllowedNamespace(ns: ProviderNamespace, requirement: NamespaceRequirement | undefined): ExcludedNamespace | undefined {
  if (requirement === undefined || ns.services.length === 0 || ns.allowed === true) return undefined;
  return { namespace: ns.namespace, reason: 'not_allowed', services: ns.services.map((s) => s.name), message: notAllowedMessage(ns.namespace, requirement) };
}

/** A namespace the cap on namespaces leaves out. */
function cappedNamespace({ ns, valid }: Candidate, maxNamespaces: number | undefined): ExcludedNamespace {
  return {
    namespace: ns.namespace,
    reason: 'cap',
    services: valid.map((s) => s.name),
    message: `namespace ${ns.namespace} is not served: at most ${maxNamespaces} provider namespaces are (the cap on namespaces; the controller's --max-namespaces), and the newest beyond it are left out, so its certificate is neither issued nor renewed. Raise the cap, or remove the label ${PROVIDER_LABEL} from Services in namespaces that need no certificate.`,
  };
}

/** A served namespace as a subject, with the Services it refuses. */
function namespaceSubject({ ns, valid }: Candidate, { policy, cache }: PlanContext): { subject: LeafSubject; refused: RefusedService[] } {
  const observed = ns.secret?.ownership === 'managed' ? observeLeafSecret(ns.secret.data, cache) : undefined;
  const served = observed?.leaf.ok ? observed.leaf.value.certificate.dnsNames : undefined;
  const { services, added, dnsNames, refused } = fitNamespace(ns.namespace, valid, served, policy.clusterDomain);
  const pending = pendingRotationRequests(services, ns.secret?.annotations[ROTATE_ACKNOWLEDGED_ANNOTATION]);
  const subject: LeafSubject = {
    target: { namespace: ns.namespace },
    label: `namespace ${ns.namespace}`,
    kind: 'serverLeaf',
    services: services.map((s) => s.name),
    promptedBy: [...new Set([...pending, ...added.map((s) => s.name)])],
    secret: ns.secret,
    previouslyIssued: ns.previouslyIssued,
    observed,
    identity: { kind: 'server', dnsNames },
    request: namespaceRotationRequest(services),
    forcedBy: pending.length > 0 ? `the annotation eso-mtls.io/rotate of ${listServices(pending)}` : undefined,
    since: oldestService(valid),
    ...(ns.writesRefused ? { writesRefused: ns.writesRefused } : {}),
  };
  return { subject, refused };
}

/** The earliest creationTimestamp of `services`, if any is known. */
function oldestService(services: readonly ProviderService[]): Instant | undefined {
  let oldest: Instant | undefined;
  for (const s of services) if (s.createdAt !== undefined && (oldest === undefined || s.createdAt < oldest)) oldest = s.createdAt;
  return oldest;
}

/** The Services whose names can be DNS SANs, and a conflict for each bad one. */
function validServices(namespace: string, services: readonly ProviderService[], clusterDomain: string): { valid: ProviderService[]; conflicts: Conflict[] } {
  const problems = services.map((s) => nameProblem(namespace, s, clusterDomain));
  return {
    valid: services.filter((_, i) => problems[i] === undefined),
    conflicts: problems.flatMap((message, i) => (message === undefined ? [] : [{ target: { namespace }, services: [services[i]!.name], message }])),
  };
}

/** Why a Service's name cannot be a DNS SAN; undefined when it can. */
function nameProblem(namespace: string, service: ProviderService, clusterDomain: string): string | undefined {
  try {
    serviceDnsNames({ namespace, name: service.name }, clusterDomain);
    return undefined;
  } catch (e) {
    if (!(e instanceof InvalidNameError)) throw e;
    return e.message;
  }
}

/**
 * The Services a namespace's certificate serves: those whose names fit its size bound (see
 * fitServiceNames), and their DNS names. Each Service left out, and each oversized rotation
 * request, is refused.
 */
function fitNamespace(
  namespace: string,
  services: readonly ProviderService[],
  served: readonly string[] | undefined,
  clusterDomain: string,
): { services: readonly ProviderService[]; added: readonly ProviderService[]; dnsNames: readonly string[]; refused: RefusedService[] } {
  const fit = fitServiceNames(
    services.map((s) => ({ ...s, namespace })),
    served,
    clusterDomain,
  );
  const tooLarge = fit.refused.map(({ service, bytes }): RefusedService => ({
    namespace,
    service: service.name,
    reason: 'certificate_too_large',
    message: `Service ${namespace}/${service.name} is left out of the certificate of namespace ${namespace}: with its DNS names they would take ${bytes} bytes, over the limit of ${MAX_DNS_NAME_BYTES} (a larger certificate fails the TLS handshake); the ${fit.fitted.length} Service(s) that fit keep being served. Label fewer Services in this namespace, or use shorter names.`,
  }));
  const ignoredRequests = fit.fitted.flatMap((s): RefusedService[] => {
    const problem = rotateRequestProblem(s.rotateRequest);
    return problem === undefined
      ? []
      : [{ namespace, service: s.name, reason: 'rotate_request_too_large', message: `Service ${namespace}/${s.name}: ${problem}` }];
  });
  return { services: fit.fitted, added: fit.added, dnsNames: fit.dnsNames, refused: [...tooLarge, ...ignoredRequests] };
}

/** `Service a`, `Services a, b, c and 4 more`: bounded, for messages. */
function listServices(names: readonly string[]): string {
  return `${names.length === 1 ? 'Service' : 'Services'} ${truncateList(names, 3)}`;
}
