import { describe, expect, it } from '@jest/globals';
import fc from 'fast-check';
import {
  type Corruption,
  type Instant,
  type Policy,
  type SecretTarget,
  SimulatedCluster,
  type SimulationEvent,
  days,
  hours,
  isPlanEmpty,
  minutes,
  resolvePolicy,
  seededRandom,
} from '@eso-mtls/core';
import { T0, testCrypto } from '../support/planner.js';

/**
 * Valid policies at a scale of days rather than months, so a run sees leaf renewals and a CA
 * rotation within a few hundred reconciles. Values are built near the validation limits, and
 * whatever resolvePolicy rejects is discarded.
 */
const policies: fc.Arbitrary<Policy> = fc
  .record({
    reconcileInterval: fc.integer({ min: 30, max: 180 }).map(minutes),
    leafJitter: fc.integer({ min: 0, max: 12 * 60 }).map(minutes),
    propagationDelay: fc.integer({ min: 0, max: 60 }).map(minutes),
    maxConnectionAge: fc.integer({ min: 0, max: 60 }).map(minutes),
    notBeforeBackdate: fc.integer({ min: 0, max: 10 }).map(minutes),
    extraLookahead: fc.integer({ min: -120, max: 48 * 60 }).map(minutes),
    extraValidity: fc.integer({ min: 60, max: 72 * 60 }).map(minutes),
    extraCaLookahead: fc.integer({ min: -60, max: 48 * 60 }).map(minutes),
    extraCaValidity: fc.integer({ min: 60, max: 96 * 60 }).map(minutes),
    keyAlgorithm: fc.constant('ECDSA-P256' as const),
  })
  .map((r) => {
    const leafLookahead = days(1) + r.reconcileInterval + r.propagationDelay + r.leafJitter + r.extraLookahead;
    const leafValidity = leafLookahead + r.leafJitter + r.extraValidity;
    const caLookahead = leafLookahead + r.leafJitter + r.propagationDelay + r.maxConnectionAge + r.reconcileInterval + r.extraCaLookahead;
    const caValidity = Math.max(leafValidity, caLookahead) + r.extraCaValidity;
    try {
      return resolvePolicy({
        reconcileInterval: r.reconcileInterval,
        leafJitter: r.leafJitter,
        propagationDelay: r.propagationDelay,
        maxConnectionAge: r.maxConnectionAge,
        notBeforeBackdate: r.notBeforeBackdate,
        keyAlgorithm: r.keyAlgorithm,
        leafLookahead,
        leafValidity,
        caLookahead,
        caValidity,
      });
    } catch {
      return undefined;
    }
  })
  .filter((p): p is Policy => p !== undefined);

const NAMESPACES = ['a', 'b', 'c'];
const SERVICES = ['p', 'q'];
const namespace = fc.constantFrom(...NAMESPACES);
const service = fc.constantFrom(...SERVICES);
const leafTarget: fc.Arbitrary<SecretTarget> = fc.oneof(
  fc.constant('client' as const),
  namespace.map((n) => ({ namespace: n })),
);
const corruption = fc.constantFrom<Corruption>('garbage', 'emptyData', 'foreignBundle', 'foreignLeaf');

/** Chaos without an instant yet: Service churn, rotation requests, deleted and corrupted Secrets. */
type Chaos = SimulationEvent extends infer E ? (E extends SimulationEvent ? Omit<E, 'at'> : never) : never;
const chaos: fc.Arbitrary<Chaos> = fc.oneof(
  fc.record({ kind: fc.constantFrom('addService' as const, 'removeService' as const), namespace, service }),
  fc.record({ kind: fc.constant('requestRotation' as const), namespace, service, token: fc.string({ minLength: 1, maxLength: 4 }) }),
  fc.record({ kind: fc.constant('deleteSecret' as const), target: leafTarget }),
  fc.record({ kind: fc.constant('corruptSecret' as const), target: leafTarget, corruption }),
);
/** At most one event per run touches the CA Secret, so trust is never lost on both sides at once. */
const caChaos: fc.Arbitrary<Chaos | undefined> = fc.option(
  fc.oneof(
    fc.record({ kind: fc.constant('deleteSecret' as const), target: fc.constant('ca' as const) }),
    fc.record({ kind: fc.constant('corruptSecret' as const), target: fc.constant('ca' as const), corruption }),
    fc.record({ kind: fc.constant('requestCaRotation' as const), token: fc.constantFrom('rotate-1', 'emergency') }),
  ),
  { nil: undefined },
);

const scenario = fc.record({
  policy: policies,
  services: fc.subarray(
    NAMESPACES.flatMap((n) => SERVICES.map((s) => [n, s] as const)),
    { minLength: 1 },
  ),
  clockSeed: fc.integer(),
  events: fc.array(fc.record({ when: fc.double({ min: 0, max: 1, noNaN: true }), event: chaos }), { maxLength: 6 }),
  caEvent: fc.record({ when: fc.double({ min: 0, max: 1, noNaN: true }), event: caChaos }),
});

/** Reconcile instants with gaps of at most reconcileInterval: mostly long gaps, some right after the previous one. */
function clock(policy: Policy, seed: number, span: number): Instant[] {
  const random = seededRandom(seed);
  // Off the whole second, so truncation to seconds is exercised.
  const times = [T0 + (Math.abs(seed) % 1000)];
  while (times[times.length - 1]! < times[0]! + span) {
    const [r] = random(1);
    const fraction = r! < 50 ? r! / 2550 : 0.5 + (r! - 50) / 410;
    times.push(times[times.length - 1]! + Math.max(1000, Math.floor(fraction * policy.reconcileInterval)));
  }
  return times;
}

describe('planner properties (fast-check)', () => {
  it('over random clocks, policies, Service sets and corrupted Secrets: idempotent, never expiring, never breaking trust, nextDueAt never late', async () => {
    await fc.assert(
      fc.asyncProperty(scenario, async ({ policy, services, clockSeed, events, caEvent }) => {
        const cluster = new SimulatedCluster(policy, testCrypto(clockSeed));
        for (const ns of NAMESPACES)
          cluster.store.setServices(
            ns,
            services.filter(([n]) => n === ns).map(([, name]) => ({ name })),
          );
        // Long enough for a CA rotation; short enough to stay a few hundred reconciles.
        const span = Math.min(policy.caValidity * 1.6, 400 * policy.reconcileInterval);
        const times = clock(policy, clockSeed, span);
        const byStep = new Map<number, Chaos>();
        for (const { when, event } of [...events, ...(caEvent.event ? [{ when: caEvent.when, event: caEvent.event }] : [])]) {
          let step = 1 + Math.floor(when * (times.length - 2));
          while (byStep.has(step)) step++;
          byStep.set(step, event);
        }
        let lastDue: Instant | undefined;
        for (let i = 0; i < times.length; i++) {
          const at = times[i]!;
          const event = byStep.get(i);
          if (event) await cluster.applyEvent({ ...event, at: at - 1 } as SimulationEvent);
          const reconcilesBefore = cluster.timeline.length;
          const replan = await cluster.reconcile(at);
          const acted = cluster.timeline.slice(reconcilesBefore).some((e) => e.kind !== 'event');
          // Something came due with nothing changed since the last reconcile: it must have been announced.
          if (acted && !event && i > 0) expect(lastDue ?? Infinity).toBeLessThanOrEqual(at);
          expect(cluster.violations).toEqual([]);
          expect(isPlanEmpty(replan)).toBe(true);
          lastDue = replan.nextDueAt;
        }
        expect(cluster.violations).toEqual([]);
        expect(cluster.caPhases.create).toBe(1);
        expect(cluster.checker.minRemaining).toBeGreaterThanOrEqual(days(1));
      }),
      { numRuns: 12, seed: 20261122, endOnFailure: true },
    );
  });

  it('the checker itself catches a broken trust and a leaf in its last day', async () => {
    // Without this, a checker that never reports anything would pass the property above.
    const policy = resolvePolicy({ reconcileInterval: hours(1) });
    const cluster = new SimulatedCluster(policy, testCrypto(3));
    cluster.store.setServices('a', [{ name: 'p' }]);
    await cluster.reconcile(T0);
    await cluster.applyEvent({ at: T0 + 1, kind: 'corruptSecret', target: { namespace: 'a' }, corruption: 'foreignLeaf' });
    const a = cluster.store.get({ namespace: 'a' })!;
    // Pretend the planner wrote the foreign leaf: the checker must see a handshake fail.
    cluster.checker.record({ namespace: 'a' }, T0 + 2, a.data, true);
    expect(cluster.checker.checkTrust(T0 + 2, ['a'])).toMatchObject([{ kind: 'trust' }]);
    const leaf = cluster.cache.parse(String(a.data['tls.crt']));
    expect(cluster.checker.checkExpiry(leaf.notAfter - hours(23), [{ namespace: 'a' }], undefined)).toMatchObject([{ kind: 'expiry' }]);
  });
});
