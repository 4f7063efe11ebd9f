import type { CertificateCache } from '../crypto/cache.js';
import { type CaMaterial, trustBundle } from '../ca/ca-layout.js';
import type { CaPhase } from '../ca/ca-phases.js';
import { type CertificateView, type KeyedCertificate } from '../x509/certificate.js';
import type { CryptoBackend, RandomSource } from '../crypto/crypto.js';
import { equalBytes } from '../x509/der.js';
import { type IssueContext, issueCa, issueClientLeaf, issueServerLeaf } from '../crypto/issue.js';
import { BUNDLE_WRITTEN_AT_ANNOTATION, SecretKeys } from '../secret/observe.js';
import { bundlePem } from '../x509/parse.js';
import { anchorOf, caPath } from '../x509/ca-path.js';
import { PENDING_KEY_FIELDS } from '../ca/upstream.js';
import { textOf } from '../x509/pem.js';
import type { BundleUpdate, LeafIssuance, Plan } from './vocabulary.js';
import type { SecretTarget } from '../secret/target.js';
import type { RotationReason } from '../policy/rules.js';
import type { Instant } from '../common/time.js';

/** One Secret write, ready for an adapter. */
export interface SecretWrite {
  /** The Secret written. */
  readonly target: SecretTarget;
  /** What it writes: the CA Secret, a leaf, or a bundle alone. */
  readonly kind: 'ca' | 'serverLeaf' | 'clientLeaf' | 'bundle';
  /** The complete data of the Secret after the write, as PEM text per key (replace, do not merge). */
  readonly data: Readonly<Record<string, string>>;
  /** POST a new Secret; otherwise update the one at `base`. */
  readonly create: boolean;
  /** resourceVersion the write was planned from (an update must fail with a conflict if it moved on). */
  readonly base?: string;
  /** Annotations to set, merged over the existing ones. */
  readonly annotations: Readonly<Record<string, string>>;
  /** Why a certificate was issued (leaves; the CA when a new one is made). Bundle updates have none. */
  readonly reason?: RotationReason;
  /** The CA phases a CA write carries out. */
  readonly phases?: readonly CaPhase[];
  /** Why, in a sentence for logs and Events. */
  readonly message?: string;
  /** The namespace's labelled Services, for Events and metrics. */
  readonly services: readonly string[];
  /** Those of {@link services} a leaf is first about (see LeafIssuance.promptedBy); empty for the CA and bundles. */
  readonly promptedBy: readonly string[];
  /** notAfter of the newly issued leaf, or of the active CA after a CA write. */
  readonly notAfter?: Instant;
}

/**
 * What executing needs: the injected crypto, and the time to issue and stamp at: the plan's `now`
 * by default; an adapter passes its clock at write time, so stamps never predate the write.
 */
export interface ExecutionContext {
  /** Key generation and signing. */
  readonly crypto: CryptoBackend;
  /** The issuing instant (default: the plan's `now`). */
  readonly now?: Instant;
  /** Issuances in flight at once; RSA key generation runs in a thread pool. Default 4. */
  readonly concurrency?: number;
  /** The planner's cache: what is issued is remembered, so re-observing it costs no parse, key check or verification. */
  readonly cache?: CertificateCache;
}

/** The CAs after the plan's CA change, with keys, and the bundle every leaf Secret gets. */
export interface MaterializedCa {
  /** The CA that signs the plan's leaves. */
  readonly active?: KeyedCertificate;
  /** The published next CA, if any. */
  readonly next?: KeyedCertificate;
  /** Retired CAs, still trusted. */
  readonly retired: readonly CertificateView[];
  /** The ca.crt text every Secret gets: the anchors of the active and next CAs, and the retired anchors. */
  readonly bundle: string;
  /** The CA Secret write, when the plan changes it. */
  readonly write?: SecretWrite;
}

const issueContext = (plan: Plan, ctx: ExecutionContext): IssueContext => ({ crypto: ctx.crypto, policy: plan.policy, now: ctx.now ?? plan.now });

/** Generates the CAs the plan asks for and builds the CA Secret write. Write it before anything it signs. */
export async function materializeCaChange(plan: Plan, ctx: ExecutionContext): Promise<MaterializedCa> {
  const issue = issueContext(plan, ctx);
  const materialize = async (m: CaMaterial | undefined): Promise<KeyedCertificate | undefined> => {
    if (m === undefined) return undefined;
    if (m.kind === 'existing') return checkHeldKey(ctx.crypto, m.keyed);
    const issued = await issueCa(issue);
    ctx.cache?.remember(issued, issued.certificate);
    return issued;
  };
  const active = await materialize(plan.trust.active);
  const next = await materialize(plan.trust.next);
  const { retired } = plan.trust;
  const bundle = trustBundle(bundledAnchors({ active, next, retired }));
  const change = plan.ca;
  if (change === undefined) return { active, next, retired, bundle };
  const { caSigner } = ctx.crypto;
  // A CA whose key a caSigner holds is stored with a reference to it, never with key material.
  const keyed = (certKey: string, pemKey: string, refKey: string, ca: KeyedCertificate): Record<string, string> => ({
    [certKey]: bundlePem(caPath(ca)),
    [caSigner?.holds(ca.privateKeyPem) ? refKey : pemKey]: ca.privateKeyPem,
  });
  const data: Record<string, string> = {};
  if (active) Object.assign(data, keyed(SecretKeys.caCertificate, SecretKeys.caPrivateKey, SecretKeys.caKeyReference, active));
  if (next) Object.assign(data, keyed(SecretKeys.nextCertificate, SecretKeys.nextPrivateKey, SecretKeys.nextKeyReference, next));
  if (retired.length > 0) data[SecretKeys.retiredCertificates] = bundlePem(retired);
  const { pending } = plan.trust;
  if (pending !== undefined) data[caSigner?.holds(pending) ? PENDING_KEY_FIELDS[1] : PENDING_KEY_FIELDS[0]] = pending;
  // Keys of CAs that leave with this write have left every bundle: the caSigner may destroy them.
  await caSigner?.retainKeys?.(
    [...(active ? [active.certificate] : []), ...(next ? [next.certificate] : []), ...retired],
    pending === undefined ? [] : [pending],
  );
  const write: SecretWrite = {
    target: 'ca',
    kind: 'ca',
    data,
    create: change.create,
    base: change.base,
    annotations: change.annotations,
    reason: change.reason,
    phases: change.phases,
    message: change.message,
    services: [],
    promptedBy: [],
    notAfter: active?.certificate.notAfter,
  };
  return { active, next, retired, bundle, write };
}

/** The anchors of the active and next CAs, then the retired ones: what the bundle holds, in its order. */
function bundledAnchors(ca: Pick<MaterializedCa, 'active' | 'next' | 'retired'>): CertificateView[] {
  return [ca.active, ca.next].flatMap((k) => (k ? [anchorOf(k)] : [])).concat(ca.retired);
}

/**
 * `keyed`, once its caSigner has confirmed it still holds the key (planning kept a reference it
 * could not check). Throws otherwise, so the CA write and every leaf wait, and the adapter counts,
 * logs and reports the failure: nothing is signed by another key instead.
 */
function checkHeldKey(crypto: CryptoBackend, keyed: KeyedCertificate): KeyedCertificate {
  const { caSigner } = crypto;
  if (!caSigner?.holds(keyed.privateKeyPem)) return keyed;
  const spki = caSigner.publicKeyOf(keyed.privateKeyPem);
  if (!equalBytes(spki, keyed.certificate.subjectPublicKeyInfo)) {
    throw new Error(`the key ${keyed.privateKeyPem} is not the key of CA ${keyed.certificate.subject} (serial ${keyed.certificate.serialNumber})`);
  }
  return keyed;
}

/** Issues one planned leaf, signed by the active CA of `ca`, with `ca.bundle` as its ca.crt. */
export async function materializeLeaf(plan: Plan, issuance: LeafIssuance, ca: MaterializedCa, ctx: ExecutionContext): Promise<SecretWrite> {
  if (!ca.active) throw new Error(`cannot issue for ${JSON.stringify(issuance.target)}: no active CA (the plan should have made it wait)`);
  const issue = issueContext(plan, ctx);
  const leaf = issuance.kind === 'clientLeaf' ? await issueClientLeaf(issue, ca.active) : await issueServerLeaf(issue, ca.active, issuance.dnsNames);
  ctx.cache?.remember(leaf, ca.active.certificate);
  return {
    target: issuance.target,
    kind: issuance.kind,
    create: issuance.create,
    base: issuance.base,
    annotations: { ...issuance.annotations, ...bundleStamp(issuance.currentBundle, ca, issue.now) },
    data: { [SecretKeys.certificate]: bundlePem(caPath(leaf)), [SecretKeys.privateKey]: leaf.privateKeyPem, [SecretKeys.caCertificate]: ca.bundle },
    reason: issuance.reason,
    message: issuance.message,
    services: issuance.services,
    promptedBy: issuance.promptedBy,
    notAfter: leaf.certificate.notAfter,
  };
}

/**
 * `eso-mtls.io/bundle-written-at` when the write adds a CA certificate the Secret's bundle lacked
 * (or the bundle is new or was unreadable): the stamp says since when the bundle has held every
 * certificate it holds. A write that keeps or drops certificates keeps the old stamp, so routine
 * renewals never postpone a CA activation.
 */
export function bundleStamp(current: readonly CertificateView[] | undefined, ca: MaterializedCa, now: Instant): Record<string, string> {
  const held = new Set(current?.map((c) => c.pem));
  const after = bundledAnchors(ca);
  const adds = current === undefined || after.some((c) => !held.has(c.pem));
  return adds ? { [BUNDLE_WRITTEN_AT_ANNOTATION]: new Date(now).toISOString() } : {};
}

/** Rewrites `ca.crt` of a Secret to `ca.bundle` at `now` (the write time), keeping its other data. */
export function materializeBundle(update: BundleUpdate, ca: MaterializedCa, now: Instant): SecretWrite {
  const data: Record<string, string> = {};
  for (const [key, value] of Object.entries(update.data)) if (value !== undefined) data[key] = textOf(value);
  data[SecretKeys.caCertificate] = ca.bundle;
  return {
    target: update.target,
    kind: 'bundle',
    data,
    create: false,
    base: update.base,
    annotations: bundleStamp(update.currentBundle, ca, now),
    services: [],
    promptedBy: [],
  };
}

/**
 * Materialises a plan: the CA write first, then leaves signed by the CA as it is after that write,
 * then bundle updates. Returns the writes in that order; performs none of them.
 */
export async function executePlan(plan: Plan, ctx: ExecutionContext): Promise<SecretWrite[]> {
  const ca = await materializeCaChange(plan, ctx);
  // Serial bytes are drawn in plan order before issuing concurrently, so a seeded RandomSource
  // gives every leaf the same serial (hence the same jitter) whatever order key generation ends in.
  const jobs = plan.leaves.map((issuance) => ({ issuance, random: prefetched(ctx.crypto.random, SERIAL_BYTES) }));
  const leaves = await mapConcurrently(jobs, ctx.concurrency ?? 4, ({ issuance, random }) =>
    materializeLeaf(plan, issuance, ca, { ...ctx, crypto: { ...ctx.crypto, random } }),
  );
  return [...(ca.write ? [ca.write] : []), ...leaves, ...plan.bundles.map((b) => materializeBundle(b, ca, ctx.now ?? plan.now))];
}

/** What one issuance draws from the RandomSource today (a 16-octet serial); more falls through to the source. */
const SERIAL_BYTES = 16;

/** A RandomSource that first serves `count` bytes drawn now from `source`, then draws from `source`. */
function prefetched(source: RandomSource, count: number): RandomSource {
  let buffer = source(count);
  return (length) => {
    if (length > buffer.length) return source(length);
    const out = buffer.slice(0, length);
    buffer = buffer.slice(length);
    return out;
  };
}

/** `map` with at most `limit` promises pending, results in input order. */
async function mapConcurrently<T, R>(items: readonly T[], limit: number, fn: (item: T) => Promise<R>): Promise<R[]> {
  const results = new Array<R>(items.length);
  let next = 0;
  const worker = async (): Promise<void> => {
    while (next < items.length) {
      const i = next++;
      results[i] = await fn(items[i]!);
    }
  };
  await Promise.all(Array.from({ length: Math.max(1, Math.min(limit, items.length)) }, worker));
  return results;
}
