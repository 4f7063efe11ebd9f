import { describe, expect, it } from '@jest/globals';
import { X509Certificate } from 'node:crypto';
import type { CryptoBackend } from '@eso-mtls/core';
import { createNodeCryptoBackend } from '@eso-mtls/core/node';
import { type RecordingAdapter, converge, startAdapter } from '@eso-mtls/test-kit/adapter';
import { eventually } from '@eso-mtls/test-kit/eventually';
import { text } from '@eso-mtls/test-kit/secrets';
import { useControlPlane } from '@eso-mtls/test-kit/installations';
import { RecordingLogger } from '@eso-mtls/test-kit/logger';
import { chainsTo, leafAndBundle } from '@eso-mtls/test-kit/secrets';

const suite = useControlPlane();

/** `count` namespaces `<prefix>-<i>`, each with one labelled Service `p`. */
async function providers(prefix: string, count: number): Promise<string[]> {
  const namespaces = Array.from({ length: count }, (_, i) => `${prefix}-${i}`);
  await Promise.all(
    namespaces.map(async (ns) => {
      await suite.cluster.namespace(ns);
      await suite.cluster.labelledService(ns, 'p');
    }),
  );
  return namespaces;
}

async function removeProviders(namespaces: string[]): Promise<void> {
  await Promise.all(namespaces.map((ns) => suite.cluster.deleteService(ns, 'p').catch(() => undefined)));
}

/** Every namespace's leaf is signed by `ca`, and every bundle is exactly `ca`. */
async function expectAllSignedBy(ca: X509Certificate, namespaces: string[]): Promise<void> {
  for (const ns of namespaces) {
    const { leaf, bundle } = leafAndBundle(await suite.cluster.secret(ns));
    expect({ ns, signedByTheCa: chainsTo(leaf, [ca]), bundle: bundle.map((c) => c.fingerprint256) }).toEqual({
      ns,
      signedByTheCa: true,
      bundle: [ca.fingerprint256],
    });
  }
}

describe('replicas, restarts and fencing on the real apiserver', () => {
  it('two adapters without leader election, started together on an empty cluster, end with exactly one CA that signed every leaf', async () => {
    const eso = await suite.cluster.namespace('eso-race');
    const namespaces = await providers('race', 50);
    let runs: RecordingAdapter[] = [];
    try {
      runs = await Promise.all([startAdapter(suite.plane.adminKubeConfig, eso), startAdapter(suite.plane.adminKubeConfig, eso)]);
      await eventually(async () => {
        for (const ns of namespaces) expect(text(await suite.cluster.secret(ns), 'tls.crt')).toContain('BEGIN CERTIFICATE');
      }, 60_000);
      await Promise.all(runs.map((r) => converge(r.adapter)));
      const caSecret = await suite.cluster.secret(eso, 'eso-provider-ca-internal');
      const ca = new X509Certificate(text(caSecret, 'ca.crt'));
      expect(text(caSecret, 'next.crt')).toBe('');
      // One CA was ever stored: exactly one successful CA write between the two replicas.
      expect(runs.flatMap((r) => r.writes.filter((w) => w.kind === 'ca'))).toHaveLength(1);
      await expectAllSignedBy(ca, namespaces);
      const client = leafAndBundle(await suite.cluster.secret(eso, 'eso-provider-client-tls'));
      expect(chainsTo(client.leaf, [ca])).toBe(true);
      // Both replicas did work and both met the other's writes (409s), yet nothing was lost.
      const stale = runs.map((r) => r.adapter.requests.count('get', 'secrets'));
      expect(stale.reduce((a, b) => a + b)).toBeGreaterThan(0);
    } finally {
      await Promise.all(runs.map((r) => r.adapter.stop()));
      await removeProviders(namespaces);
    }
  }, 120_000);

  it('keeps working across a kube-apiserver crash and restart in the middle of a reconcile, and converges', async () => {
    const eso = await suite.cluster.namespace('eso-restart');
    const namespaces = await providers('restart', 80);
    let crashed: Promise<void> | undefined;
    let writtenWhenDown = -1;
    const run = await startAdapter(suite.plane.adminKubeConfig, eso, { writeConcurrency: 4 });
    try {
      await eventually(
        () => {
          // Kill it as soon as the round is under way: the CA and some leaves written, most not.
          if (!crashed && run.writes.length >= 5) {
            crashed = suite.plane.stopApiServer({ crash: true }).then(() => void (writtenWhenDown = run.writes.length));
          }
          return crashed !== undefined;
        },
        30_000,
        'the round to write its first Secrets',
        1,
      );
      await crashed;
      expect(writtenWhenDown).toBeLessThan(namespaces.length);
      await new Promise((r) => setTimeout(r, 1000)); // down for a moment: writes and watches fail
      await suite.plane.startApiServer();
      await eventually(
        async () => {
          for (const ns of namespaces) expect(text(await suite.cluster.secret(ns), 'tls.crt')).toContain('BEGIN CERTIFICATE');
        },
        90_000,
        'every namespace to hold a certificate',
        250,
      );
      await converge(run.adapter);
      const ca = new X509Certificate(text(await suite.cluster.secret(eso, 'eso-provider-ca-internal'), 'ca.crt'));
      await expectAllSignedBy(ca, namespaces);
      // It saw the outage (failed requests, broken watches) and came back without being restarted.
      const stats = run.adapter.informerStats();
      expect(stats.errors + stats.expired).toBeGreaterThan(0);
      expect(stats.watches).toBeGreaterThan(4);
    } finally {
      await run.adapter.stop();
      await removeProviders(namespaces);
    }
  }, 180_000);

  it('coalesces a burst of Service events into a few reconciles', async () => {
    const eso = await suite.cluster.namespace('eso-burst');
    const logger = new RecordingLogger();
    const run = await startAdapter(suite.plane.adminKubeConfig, eso, { debounceMs: 100, logger });
    const namespaces = Array.from({ length: 40 }, (_, i) => `burst-${i}`);
    try {
      await Promise.all(namespaces.map((ns) => suite.cluster.namespace(ns)));
      await converge(run.adapter);
      const rounds = run.adapter.rounds;
      await Promise.all(namespaces.map((ns) => suite.cluster.labelledService(ns, 'p')));
      await eventually(() => run.writes.filter((w) => w.kind === 'serverLeaf').length === 40);
      await converge(run.adapter);
      // 40 Service events and 40 Secret events of our own writes: a handful of rounds, not 80.
      expect(run.adapter.rounds - rounds).toBeLessThanOrEqual(14); // includes converge()'s two confirming rounds
      expect(run.writes.filter((w) => w.kind === 'serverLeaf')).toHaveLength(40);
      // Every write got its answer: no failure, no retry.
      expect(logger.lines.filter((l) => l.level === 'error' || l.level === 'warn')).toEqual([]);
    } finally {
      await run.adapter.stop();
      await removeProviders(namespaces);
    }
  });

  it('stops writing at once when writesAllowed() turns false mid-round, and resumes when it turns true', async () => {
    let allowed = true;
    let fenceOnce = true;
    const eso = await suite.cluster.namespace('eso-fenced');
    const namespaces = await providers('fence', 30);
    let flipAt: Record<string, number> | undefined;
    let landedAtFlip = 0;
    let started: RecordingAdapter | undefined;
    const run = (started = await startAdapter(suite.plane.adminKubeConfig, eso, {
      writesAllowed: () => {
        // Fence the moment the third write has landed, mid-round, from inside the adapter's own check.
        if (fenceOnce && started && started.writes.length >= 3) {
          fenceOnce = false;
          allowed = false;
          flipAt = started.adapter.requests.snapshot();
          landedAtFlip = started.writes.length;
        }
        return allowed;
      },
    }));
    try {
      await eventually(() => flipAt !== undefined);
      await new Promise((r) => setTimeout(r, 1000));
      const since = run.adapter.requests.since(flipAt!);
      expect(Object.keys(since).filter((k) => /^(create|update|patch|delete) /.test(k) && k !== 'create events')).toEqual([]);
      // An Event is fenced when it is decided: those of the writes that landed before the fence may still be on their way.
      expect(since['create events'] ?? 0).toBeLessThanOrEqual(landedAtFlip);
      expect(await run.adapter.reconcileNow()).toBeUndefined();
      const missing = [];
      for (const ns of namespaces) if (!(await suite.cluster.secret(ns))) missing.push(ns);
      expect(missing.length).toBeGreaterThan(0);

      const resume = run.writes.length;
      allowed = true;
      run.adapter.requestReconcile();
      await eventually(async () => {
        for (const ns of namespaces) expect(text(await suite.cluster.secret(ns), 'tls.crt')).toContain('BEGIN CERTIFICATE');
      });
      expect(run.writes.length).toBeGreaterThan(resume);
    } finally {
      allowed = true;
      await run.adapter.stop();
      await removeProviders(namespaces);
    }
  });

  it('when the Secret fence closes mid-round: no key is generated after it, and the Events of the writes that landed still go out', async () => {
    let allowed = true;
    let keygensAfterFence = 0;
    const base = createNodeCryptoBackend();
    const crypto: CryptoBackend = {
      ...base,
      signer: {
        generateKey: (algorithm) => {
          if (!allowed) keygensAfterFence++;
          return base.signer.generateKey(algorithm);
        },
        sign: (...args) => base.signer.sign(...args),
      },
    };
    const eso = await suite.cluster.namespace('eso-stopping');
    const namespaces = await providers('stopping', 40);
    let started: RecordingAdapter | undefined;
    const run = (started = await startAdapter(suite.plane.adminKubeConfig, eso, {
      crypto,
      writeConcurrency: 4,
      // As a stopping leader: Secrets fenced from the fifth write on, Events (leadership) still open.
      writesAllowed: () => {
        if (started && started.writes.length >= 5) allowed = false;
        return allowed;
      },
      eventsAllowed: () => true,
    }));
    try {
      await eventually(() => !allowed);
      await run.adapter.stop(); // flushes the queued Events
      const written = [];
      for (const ns of namespaces) if (await suite.cluster.secret(ns)) written.push(ns);
      expect(written.length).toBeGreaterThan(0);
      expect(written.length).toBeLessThan(namespaces.length);
      // Keys already being generated when the fence closed may finish; none is started after it.
      expect(keygensAfterFence).toBe(0);
      for (const ns of written) {
        expect({ ns, events: (await suite.cluster.events(ns, 'p')).map((e) => e.reason) }).toEqual({ ns, events: ['Issued'] });
      }
    } finally {
      allowed = true;
      await run.adapter.stop();
      await removeProviders(namespaces);
    }
  });
});
