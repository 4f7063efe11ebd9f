// What happened to the Secrets during a soak, read from the apiserver's audit log (every write to a
// Secret, with the object written), not from the controller's own account of it.
import { X509Certificate } from 'node:crypto';
import type { AuditEvent } from '../envtest/src/index.js';

/** The audit policy of a soak: every write to a Secret with its object; other writes' metadata. */
export const SOAK_AUDIT_POLICY = `apiVersion: audit.k8s.io/v1
kind: Policy
omitStages: ["RequestReceived", "ResponseStarted"]
rules:
- level: RequestResponse
  verbs: ["create", "update", "patch", "delete"]
  resources: [{ group: "", resources: ["secrets"] }]
- level: Metadata
  verbs: ["create", "update", "patch", "delete"]
- level: None
`;

/** One successful write to a Secret. */
export interface SecretVersion {
  readonly at: number;
  readonly user: string;
  readonly verb: string;
  readonly namespace: string;
  readonly name: string;
  /** The Secret's data after the write, decoded; undefined for a delete. */
  readonly data: Readonly<Record<string, string>> | undefined;
  readonly annotations: Readonly<Record<string, string>>;
}

/** Every successful Secret write in the audit log, in the order the apiserver finished them. */
export function secretVersions(events: readonly AuditEvent[]): SecretVersion[] {
  return events
    .filter((e) => e.stage === 'ResponseComplete' && e.objectRef?.resource === 'secrets' && ['create', 'update', 'patch', 'delete'].includes(e.verb))
    .filter((e) => (e.responseStatus?.code ?? 0) < 300)
    .map((e) => {
      const object = e.responseObject as { kind?: string; data?: Record<string, string>; metadata?: { annotations?: Record<string, string> } } | undefined;
      const deleted = e.verb === 'delete';
      return {
        at: Date.parse(e.stageTimestamp),
        user: e.user.username,
        verb: e.verb,
        namespace: e.objectRef!.namespace!,
        name: e.objectRef!.name!,
        data: deleted || object?.kind !== 'Secret' ? undefined : decode(object.data ?? {}),
        annotations: deleted ? {} : (object?.metadata?.annotations ?? {}),
      };
    });
}

function decode(data: Record<string, string>): Record<string, string> {
  return Object.fromEntries(Object.entries(data).map(([k, v]) => [k, Buffer.from(v, 'base64').toString('latin1')]));
}

/** How many times each namespace's provider Secret got a new certificate from `writers`. */
export function issuancesByNamespace(versions: readonly SecretVersion[], secret: string, writers: ReadonlySet<string>): Map<string, number> {
  const last = new Map<string, string | undefined>();
  const counts = new Map<string, number>();
  for (const v of versions) {
    if (v.name !== secret) continue;
    const before = last.get(v.namespace);
    const now = v.data?.['tls.crt'];
    last.set(v.namespace, now);
    if (writers.has(v.user) && now !== undefined && now !== before) counts.set(v.namespace, (counts.get(v.namespace) ?? 0) + 1);
  }
  return counts;
}

/** Key material of the ESO namespace: every private key its Secrets ever held, as PEM body lines. */
export function esoKeyLines(versions: readonly SecretVersion[], esoNamespace: string): Set<string> {
  const lines = new Set<string>();
  for (const v of versions) {
    if (v.namespace !== esoNamespace || v.data === undefined) continue;
    for (const value of Object.values(v.data)) {
      if (!value.includes('PRIVATE KEY')) continue;
      for (const l of value.split('\n')) if (l.length >= 40 && !l.startsWith('-----')) lines.add(l.trim());
    }
  }
  return lines;
}

/** Secret writes outside the ESO namespace that carried a line of an ESO-namespace private key. */
export function leakedKeys(versions: readonly SecretVersion[], esoNamespace: string): string[] {
  const keys = esoKeyLines(versions, esoNamespace);
  return versions
    .filter((v) => v.namespace !== esoNamespace && v.data !== undefined)
    .filter((v) => Object.values(v.data!).some((value) => value.split('\n').some((l) => keys.has(l.trim()))))
    .map((v) => `${v.verb} ${v.namespace}/${v.name} by ${v.user} at ${new Date(v.at).toISOString()}`);
}

/** One change of the CA Secret's signing CA, or of its next CA. */
export interface CaEvent {
  readonly at: number;
  readonly kind: 'active' | 'prepare';
  readonly fingerprint: string;
  /** For a prepare: days between the active CA's notBefore and the next CA's (the active CA's age). */
  readonly activeAgeDays?: number;
  /** For a prepare: a rotate annotation had been set on the CA Secret by someone else since the last CA event. */
  readonly requested?: boolean;
}

/**
 * The CA Secret's history: each new active CA and each new next CA, in order. Problems: an active
 * CA that comes back after another replaced it (two writers with different CAs), and a version
 * without an active CA after the first.
 */
export function caHistory(
  versions: readonly SecretVersion[],
  namespace: string,
  name: string,
  writers: ReadonlySet<string>,
): { events: CaEvent[]; problems: string[] } {
  const events: CaEvent[] = [];
  const problems: string[] = [];
  const seenActive: string[] = [];
  let active: X509Certificate | undefined;
  let next: string | undefined;
  let requested = false;
  for (const v of versions) {
    if (v.namespace !== namespace || v.name !== name) continue;
    if (!writers.has(v.user)) {
      if (v.annotations['eso-mtls.io/rotate'] !== undefined) requested = true;
      continue;
    }
    if (v.data === undefined) continue;
    const activePem = v.data['ca.crt'];
    const nextPem = v.data['next.crt'];
    if (activePem === undefined) {
      // A recovery holds only its next CA until that may sign; anything else is a broken Secret.
      if (nextPem === undefined) problems.push(`CA Secret written with neither an active nor a next CA at ${new Date(v.at).toISOString()} by ${v.user}`);
      active = undefined;
      next = nextPem === undefined ? undefined : new X509Certificate(nextPem).fingerprint256;
      continue;
    }
    const cert = new X509Certificate(activePem);
    if (cert.fingerprint256 !== active?.fingerprint256) {
      if (seenActive.includes(cert.fingerprint256)) problems.push(`CA ${cert.fingerprint256} active again at ${new Date(v.at).toISOString()} (by ${v.user})`);
      seenActive.push(cert.fingerprint256);
      events.push({ at: v.at, kind: 'active', fingerprint: cert.fingerprint256 });
      active = cert;
      requested = false;
    }
    const nextFingerprint = nextPem ? new X509Certificate(nextPem).fingerprint256 : undefined;
    if (nextFingerprint !== undefined && nextFingerprint !== next) {
      const ageDays = (Date.parse(new X509Certificate(nextPem!).validFrom) - Date.parse(cert.validFrom)) / 86_400_000;
      events.push({ at: v.at, kind: 'prepare', fingerprint: nextFingerprint, activeAgeDays: ageDays, requested });
      requested = false;
    }
    next = nextFingerprint;
  }
  return { events, problems };
}

/**
 * Provider Secret versions written by `writers` whose leaf is not signed by the CA that was active
 * in the CA Secret when they were written (a replica signing with a CA it should no longer use).
 */
export function leavesNotFromActiveCa(
  versions: readonly SecretVersion[],
  secret: string,
  caNamespace: string,
  caName: string,
  writers: ReadonlySet<string>,
): string[] {
  const problems: string[] = [];
  let active: X509Certificate | undefined;
  const lastLeaf = new Map<string, string | undefined>();
  for (const v of versions) {
    if (v.namespace === caNamespace && v.name === caName && writers.has(v.user) && v.data?.['ca.crt']) active = new X509Certificate(v.data['ca.crt']);
    if (v.name !== secret || !writers.has(v.user) || v.data?.['tls.crt'] === undefined) continue;
    const pem = v.data['tls.crt'];
    if (pem === lastLeaf.get(v.namespace)) continue;
    lastLeaf.set(v.namespace, pem);
    if (active === undefined || !new X509Certificate(pem).verify(active.publicKey)) {
      problems.push(`${v.namespace}/${secret} written at ${new Date(v.at).toISOString()} by ${v.user} holds a leaf not signed by the active CA`);
    }
  }
  return problems;
}
