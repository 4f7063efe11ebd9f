import { type CaPhase, type SecretWrite, describeTarget, truncateList } from '@eso-mtls/core';
import type { ReconcileOutcome } from './reconcile-loop.js';
import type { DemoEvent } from './timeline.js';

/** What each CA phase does, in the words of docs/ca-rotation.md. */
const CA_PHASE_WORDS: Readonly<Record<CaPhase, string>> = {
  create: 'CA created',
  prepare: 'prepare: next CA generated and published in every bundle (it signs nothing yet)',
  activate: 'activate: next CA signs from now on; the old one stays trusted as retired',
  retire: 'retire: old CA dropped from every bundle (nothing in use depends on it)',
  recover: 'recover: CA key lost, readable CA certificates kept trusted while a new CA is published',
  emergency: 'emergency: new CA active at once, every older one dropped',
  restore: 'restore: CA certificate put back from the client bundle',
  renew: 'renew: a new upstream intermediate under the same anchor signs at once; no bundle changes',
};

const day = (t: number | undefined): string => (t === undefined ? '' : ` (notAfter ${new Date(t).toISOString().slice(0, 10)})`);

/** `namespace/provider-aws` as `provider-aws`, `client` as `ESO client`: how the timeline names a Secret's owner. */
export function subjectOf(write: Pick<SecretWrite, 'target'>): string {
  return write.target === 'client' ? 'ESO client' : write.target === 'ca' ? 'CA' : describeTarget(write.target);
}

/**
 * The timeline lines of one reconcile: one per CA write and per leaf issued (with its reason),
 * and one for all bundle rewrites together (they are not rotations), and one for refused writes.
 */
export function describeReconcile(outcome: ReconcileOutcome): DemoEvent[] {
  const events: DemoEvent[] = [];
  const bundles: string[] = [];
  for (const w of outcome.written) {
    switch (w.kind) {
      case 'ca':
        events.push({ source: 'controller', subject: 'CA', message: (w.phases ?? []).map((p) => CA_PHASE_WORDS[p]).join('; '), reason: w.reason });
        break;
      case 'serverLeaf':
        events.push({
          source: 'controller',
          subject: subjectOf(w),
          message: `server certificate issued for ${truncateList(w.services)}${day(w.notAfter)}`,
          reason: w.reason,
        });
        break;
      case 'clientLeaf':
        events.push({ source: 'controller', subject: subjectOf(w), message: `client certificate issued${day(w.notAfter)}`, reason: w.reason });
        break;
      case 'bundle':
        bundles.push(subjectOf(w));
    }
  }
  if (bundles.length > 0) {
    events.push({ source: 'controller', subject: bundles.join(', '), message: 'trust bundle (ca.crt) rewritten, certificate kept (not a rotation)' });
  }
  if (outcome.stale > 0) {
    events.push({ source: 'controller', subject: 'cluster', message: `${outcome.stale} write(s) refused: the Secret changed since the plan; planning again` });
  }
  return events;
}
