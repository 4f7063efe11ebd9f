import {
  CA_REQUEST_ANNOTATION,
  CA_SOURCE_ANNOTATION,
  type CertificateCache,
  type CertificateView,
  type Duration,
  type Instant,
  type Plan,
  SELF_SIGNED_SOURCE,
  type SecretState,
  type UpstreamObservation,
  observeCaSecret,
} from '@eso-mtls/core';
import { type CaSource, DEFAULT_CA_REQUEST_DEADLINE, sourceName } from '@eso-mtls/kubernetes';
import type { PathCertificateReport, Problem, UpstreamCaReport } from './report.js';

/*
 * `eso-mtls status` for an upstream CA source (docs/chaining-to-your-pki.md): which source is
 * configured and which the CA Secret records, each CA slot's path up to its trust anchor, the
 * CertificateRequest pending, what the CA waits for, and the source's problems as the controller
 * reports them. Pure: the CA Secret and the source as read, and the plan made from them.
 */

/** What the upstream section is judged from. */
export interface UpstreamContext {
  readonly now: Instant;
  readonly plan: Plan;
  readonly cache: CertificateCache;
  readonly esoNamespace: string;
  readonly caSource: CaSource;
  /** What status read of the source (not {@link plannedUpstream}'s stand-in); undefined: not read. */
  readonly observation: UpstreamObservation | undefined;
}

const DAY = 86_400_000;

/**
 * The upstream observation status plans with: what it read of the source, or, when it read none,
 * one that says so. Planned without any, an upstream CA would be judged as the self-signed CA's
 * and shown as due for a rotation back to it; with this one its intermediates are judged as the
 * controller judges them, and the problems of not reading are status's own (not shown as the
 * source's). Undefined with the self-signed CA configured.
 */
export function plannedUpstream(read: UpstreamObservation | undefined, caSource: CaSource, caValidity: Duration): UpstreamObservation | undefined {
  if (caSource.kind === 'self-signed') return undefined;
  if (read) return read;
  const notRead = { ok: false, message: 'not read by eso-mtls status' } as const;
  return {
    kind: caSource.kind,
    source: sourceName(caSource),
    anchors: notRead,
    ...(caSource.kind === 'secret' ? { secret: { certificate: notRead, key: notRead } } : {}),
    requestedValidity: caSource.kind === 'issuer' ? (caSource.duration ?? caValidity) : caValidity,
    requestDeadline: caSource.kind === 'issuer' ? caSource.requestDeadline : DEFAULT_CA_REQUEST_DEADLINE,
  };
}

/** One certificate of a path: public facts only. */
function pathCertificate(c: CertificateView, now: Instant, anchor: boolean): PathCertificateReport {
  return {
    subject: c.subject,
    serialNumber: c.serialNumber,
    notAfter: new Date(c.notAfter).toISOString(),
    daysLeft: Math.floor((c.notAfter - now) / DAY),
    anchor,
  };
}

/** The path of each usable CA slot: the signing certificate, the certificates above it, the anchor last. */
function slotPaths(state: SecretState, ctx: UpstreamContext): UpstreamCaReport['paths'] {
  const observed = observeCaSecret(state.data, ctx.cache);
  const paths: { slot: 'active' | 'next'; certificates: PathCertificateReport[] }[] = [];
  for (const [slot, pair] of [
    ['active', observed.active],
    ['next', observed.next],
  ] as const) {
    if (!pair?.ok) continue;
    const path = [pair.value.certificate, ...(pair.value.chain ?? [])];
    paths.push({ slot, certificates: path.map((c, i) => pathCertificate(c, ctx.now, i === path.length - 1)) });
  }
  return paths;
}

/** What the CA waits for from the source, in a sentence; undefined when it waits for nothing. */
function waitingFor(source: string, request: string | undefined, ctx: UpstreamContext): string | undefined {
  const upstream = ctx.plan.upstream;
  const observed = ctx.observation?.request;
  const state = observed && observed.name === request?.split('/')[1] ? ` (${observed.state}: ${observed.message})` : '';
  if (request !== undefined) return `CertificateRequest ${request} to be approved and issued by ${source}${state}`;
  if (upstream?.wants === undefined) return undefined;
  return ctx.caSource.kind === 'secret'
    ? `${source} to hold a new intermediate: ${upstream.wants}`
    : `the controller to ask ${source} for an intermediate: ${upstream.wants}`;
}

/**
 * The upstream section of the CA report, and its problems; undefined when neither the
 * configuration nor the CA Secret names an upstream source.
 */
export function evaluateUpstream(state: SecretState | undefined, ctx: UpstreamContext): { report: UpstreamCaReport; problems: Problem[] } | undefined {
  const recordedValue = state?.annotations[CA_SOURCE_ANNOTATION];
  const recorded = recordedValue === undefined || recordedValue === '' || recordedValue === SELF_SIGNED_SOURCE ? undefined : recordedValue;
  const configured = ctx.caSource.kind === 'self-signed' ? undefined : ctx.caSource;
  if (!configured && recorded === undefined) return undefined;
  const source = configured ? sourceName(configured) : recorded!;
  const requestName = state?.annotations[CA_REQUEST_ANNOTATION];
  const request = requestName ? `${ctx.esoNamespace}/${requestName}` : undefined;
  const ours = state?.ownership === 'managed';
  const waiting = waitingFor(source, request, ctx);
  const report: UpstreamCaReport = {
    ...(configured
      ? { configured: source, trustAnchors: `${configured.trustAnchors.kind}/${configured.trustAnchors.name}/${configured.trustAnchors.key}` }
      : { configured: SELF_SIGNED_SOURCE }),
    ...(recorded !== undefined ? { recorded } : {}),
    sourceRead: configured === undefined || ctx.observation !== undefined,
    paths: ours ? slotPaths(state!, ctx) : [],
    ...(request !== undefined ? { pendingRequest: request } : {}),
    ...(waiting !== undefined ? { waitingFor: waiting } : {}),
  };
  // Unread, the plan's problems are status's own (nothing read), not the source's.
  const judged = ctx.observation === undefined ? [] : (ctx.plan.upstream?.problems ?? []);
  const problems = judged.map((p): Problem => ({ kind: 'upstream', message: `${p.reason}: ${p.message}` }));
  return { report, problems };
}
