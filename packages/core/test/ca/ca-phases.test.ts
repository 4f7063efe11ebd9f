import { beforeAll, describe, expect, it } from '@jest/globals';
import { type CertificateView, type Issued, type KeyedCertificate, type SecretState, days, minutes, refusalGrace } from '@eso-mtls/core';
import { type CaLayout } from '../../src/ca/ca-layout.js';
import {
  activatePhase,
  type CaRotationInput,
  emergencyPhase,
  generatedSchedule,
  initialSlots,
  preparePhase,
  readCaSecret,
  recoverOrCreatePhase,
  restorePhase,
  retirePhase,
  salvagePhase,
} from '../../src/ca/ca-phases.js';
import { caRotationInput, issueCaGenerations, managedCaSecret } from '../support/ca-secrets.js';
import { Pki, T0 } from '../support/planner.js';

// Each phase of planCaRotation on its own, in the order it is decided (see docs/ca-rotation.md).
const pki = new Pki();
const { policy } = pki;
let old: Issued, active: Issued, next: Issued, leafOld: Issued;

beforeAll(async () => {
  ({ old, active, next, leafOld } = await issueCaGenerations(pki));
});

const caSecret = (data: Record<string, string>, annotations: Record<string, string> = {}): SecretState => managedCaSecret(data, { annotations });
const pair = (ca: Issued, prefix: 'ca' | 'next'): Record<string, string> => ({ [`${prefix}.crt`]: ca.certificate.pem, [`${prefix}.key`]: ca.privateKeyPem });
const reading = (now: number, overrides: Partial<CaRotationInput>) => readCaSecret(caRotationInput(pki, now, overrides));
const serials = (cs: readonly CertificateView[]): string[] => cs.map((c) => c.serialNumber);
const kinds = (slots: CaLayout): [string?, string?] => [slots.active?.kind, slots.next?.kind];

describe('emergencyPhase', () => {
  it('acts only on an emergency request: a new active CA, nothing else trusted', () => {
    const r = reading(T0 + days(1), { caSecret: caSecret(pair(active, 'ca'), { 'eso-mtls.io/rotate': 'emergency:2' }) });
    expect(emergencyPhase(r)).toMatchObject({ phase: 'emergency', reason: 'forced', slots: { active: { kind: 'generate' }, retired: [] } });
    expect(emergencyPhase(reading(T0 + days(1), { caSecret: caSecret(pair(active, 'ca'), { 'eso-mtls.io/rotate': 'now' }) }))).toBeUndefined();
  });
});

describe('restorePhase', () => {
  it('reports a certificate put back from the client bundle for a good key; nothing otherwise', () => {
    const r = reading(T0 + days(1), { caSecret: caSecret({ 'ca.key': active.privateKeyPem }), clientBundle: [active.certificate] });
    expect(r.active?.certificate.serialNumber).toBe(active.certificate.serialNumber);
    const step = restorePhase(r, initialSlots(r));
    expect(step.phase).toBe('restore');
    expect(step.message).toContain('ca.crt/ca.key');
    const intact = reading(T0 + days(1), { caSecret: caSecret(pair(active, 'ca')), clientBundle: [active.certificate] });
    expect(restorePhase(intact, initialSlots(intact)).phase).toBeUndefined();
  });

  it('never restores from a certificate whose key does not match, or that is not self-signed', () => {
    const r = reading(T0 + days(1), { caSecret: caSecret({ 'ca.key': active.privateKeyPem }), clientBundle: [old.certificate, leafOld.certificate] });
    expect(r.active).toBeUndefined();
    expect(r.restored).toEqual([]);
  });
});

describe('salvagePhase', () => {
  it('keeps every readable CA certificate trusted as retired when no key is usable', () => {
    const r = reading(T0 + days(1), { caSecret: caSecret({ 'ca.crt': active.certificate.pem, 'ca.key': 'garbage' }), clientBundle: [old.certificate] });
    const step = salvagePhase(r, initialSlots(r));
    expect(serials(step.slots.retired)).toEqual(serials([active.certificate, old.certificate]));
    expect(step.phase).toBeUndefined();
  });

  it('does nothing while the CA Secret is whole', () => {
    const r = reading(T0 + days(1), { caSecret: caSecret(pair(active, 'ca')), clientBundle: [old.certificate] });
    expect(salvagePhase(r, initialSlots(r)).slots.retired).toEqual([]);
  });
});

describe('retirePhase', () => {
  const withRetired = (now: number, leavesInUse: KeyedCertificate[]) =>
    reading(now, { caSecret: caSecret({ ...pair(active, 'ca'), 'retired.crt': old.certificate.pem }), leavesInUse });

  it('keeps a retired CA a leaf in use depends on, and says when to look again', () => {
    const r = withRetired(T0 + days(1), [leafOld]);
    const step = retirePhase(r, initialSlots(r));
    expect(serials(step.slots.retired)).toEqual([old.certificate.serialNumber]);
    expect(step.phase).toBeUndefined();
    expect(step.dueAt).toContain(T0 + days(1) + 1000 + policy.propagationDelay + policy.maxConnectionAge);
  });

  it('drops it once nothing uses it and the last replacement is old enough', () => {
    const r = withRetired(T0 + days(1), []);
    expect(retirePhase(r, initialSlots(r))).toMatchObject({ phase: 'retire', slots: { retired: [] } });
  });
});

describe('recoverOrCreatePhase', () => {
  it('no CA anywhere: create, reason initial', () => {
    const r = reading(T0, {});
    expect(recoverOrCreatePhase(r, initialSlots(r))).toMatchObject({ phase: 'create', reason: 'initial', slots: { active: { kind: 'generate' } } });
  });

  it('a valid retired CA and no key: recover, a new next CA and none active', () => {
    const r = reading(T0 + days(1), {});
    const step = recoverOrCreatePhase(r, { retired: [active.certificate] });
    expect(step).toMatchObject({ phase: 'recover', reason: 'secret_missing' });
    expect(kinds(step.slots)).toEqual([undefined, 'generate']);
  });

  it('a usable CA: nothing to do', () => {
    const r = reading(T0 + days(1), { caSecret: caSecret(pair(active, 'ca')) });
    expect(recoverOrCreatePhase(r, initialSlots(r)).phase).toBeUndefined();
  });
});

describe('activatePhase', () => {
  const published = (now: number, bundles: CaRotationInput['bundles']) =>
    reading(now, { caSecret: caSecret({ ...pair(active, 'ca'), ...pair(next, 'next') }), bundles });
  const nextIssued = T0 + days(305);

  it('waits propagationDelay after next was published, then next signs and the old active is retired', () => {
    const held = [{ certificates: [active.certificate, next.certificate] }];
    const early = published(nextIssued + minutes(1), held);
    const waiting = activatePhase(early, initialSlots(early));
    expect(waiting.phase).toBeUndefined();
    const at = waiting.dueAt[0]!;
    const due = published(at, held);
    const step = activatePhase(due, initialSlots(due));
    expect(step.phase).toBe('activate');
    expect(step.slots.active?.kind === 'existing' && step.slots.active.keyed.certificate.serialNumber).toBe(next.certificate.serialNumber);
    expect(serials(step.slots.retired)).toEqual([active.certificate.serialNumber]);
  });

  it('while a bundle lacks next it waits, and says when signing is expected', () => {
    const r = published(nextIssued + days(1), [{ certificates: [active.certificate] }]);
    const step = activatePhase(r, initialSlots(r));
    expect(step.phase).toBeUndefined();
    expect(step.resumesAt).toBeGreaterThan(nextIssued + days(1));
  });

  it('a bundle whose writes are refused holds it for refusalGrace, then is left behind; a refused bundle that holds next changes nothing', () => {
    const since = nextIssued + minutes(1);
    const holds = { certificates: [active.certificate, next.certificate] };
    const refused = { certificates: [active.certificate], refusedSince: since };
    const grace = refusalGrace(policy);
    const early = published(since + grace - 1000, [holds, refused]);
    const waiting = activatePhase(early, initialSlots(early));
    expect(waiting.phase).toBeUndefined();
    expect(waiting.dueAt).toContain(since + grace);
    const due = published(since + grace, [holds, refused]);
    expect(activatePhase(due, initialSlots(due))).toMatchObject({ phase: 'activate', message: expect.stringContaining('without 1 namespace(s)') });
    const refusedButCurrent = published(nextIssued + days(1), [holds, { ...holds, refusedSince: nextIssued + days(1) }]);
    expect(activatePhase(refusedButCurrent, initialSlots(refusedButCurrent)).message).not.toContain('without');
  });
});

describe('preparePhase', () => {
  it('announces the prepare instant before the lookahead, prepares at it (reason expiring)', () => {
    const before = reading(T0 + days(10), { caSecret: caSecret(pair(active, 'ca')) });
    const prepareAt = active.certificate.notAfter - policy.caLookahead;
    expect(preparePhase(before, initialSlots(before))).toMatchObject({ dueAt: [prepareAt] });
    const at = reading(prepareAt, { caSecret: caSecret(pair(active, 'ca')) });
    const step = preparePhase(at, initialSlots(at));
    expect(step).toMatchObject({ phase: 'prepare', reason: 'expiring' });
    expect(kinds(step.slots)).toEqual(['existing', 'generate']);
  });

  it('a request prepares at once (forced); an unreadable next is replaced (invalid)', () => {
    const asked = reading(T0 + days(1), { caSecret: caSecret(pair(active, 'ca'), { 'eso-mtls.io/rotate': 'r1' }) });
    expect(preparePhase(asked, initialSlots(asked))).toMatchObject({ phase: 'prepare', reason: 'forced' });
    const broken = reading(T0 + days(1), { caSecret: caSecret({ ...pair(active, 'ca'), 'next.crt': 'garbage', 'next.key': 'garbage' }) });
    expect(preparePhase(broken, initialSlots(broken))).toMatchObject({ phase: 'prepare', reason: 'invalid' });
  });
});

describe('generatedSchedule', () => {
  it('a generated next signs after propagationDelay; a generated active is prepared at its end', () => {
    const r = reading(T0, {});
    const recover = generatedSchedule(r, { next: { kind: 'generate' }, retired: [] });
    expect(recover.resumesAt).toBe(T0 + 1000 + policy.propagationDelay);
    expect(generatedSchedule(r, { active: { kind: 'generate' }, retired: [] }).dueAt).toEqual([T0 + policy.caValidity - policy.caLookahead]);
  });
});
