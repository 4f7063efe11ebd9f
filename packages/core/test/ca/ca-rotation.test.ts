import { beforeAll, describe, expect, it } from '@jest/globals';
import { type CertificateView, type Issued, type SecretState, days, minutes } from '@eso-mtls/core';
import { planCaRotation } from '../../src/ca/ca-rotation.js';
import { type CaRotationInput } from '../../src/ca/ca-phases.js';
import { caRotationInput, issueCaGenerations, managedCaSecret } from '../support/ca-secrets.js';
import { Pki, T0 } from '../support/planner.js';

const pki = new Pki();
const { policy } = pki;
let old: Issued, active: Issued, next: Issued, leafOld: Issued, leafActive: Issued;

beforeAll(async () => {
  ({ old, active, next, leafOld } = await issueCaGenerations(pki));
  leafActive = await pki.server(active, T0 + days(100), ['a']);
});

function caSecret(parts: { active?: Issued; next?: Issued; retired?: CertificateView[] }, extra: Partial<SecretState> = {}): SecretState {
  const data: Record<string, string> = {};
  if (parts.active) Object.assign(data, { 'ca.crt': parts.active.certificate.pem, 'ca.key': parts.active.privateKeyPem });
  if (parts.next) Object.assign(data, { 'next.crt': parts.next.certificate.pem, 'next.key': parts.next.privateKeyPem });
  if (parts.retired?.length) data['retired.crt'] = parts.retired.map((c) => c.pem).join('');
  return managedCaSecret(data, extra);
}

const input = (now: number, overrides: Partial<CaRotationInput>): CaRotationInput => caRotationInput(pki, now, overrides);

const held = (...certificates: CertificateView[]): { certificates: CertificateView[] } => ({ certificates });
const kinds = (layout: { active?: { kind: string }; next?: { kind: string } }): [string?, string?] => [layout.active?.kind, layout.next?.kind];

describe('CA rotation: create', () => {
  it('no CA anywhere: creates an active CA at once, reason initial', () => {
    const plan = planCaRotation(input(T0, {}));
    expect(plan.change).toMatchObject({ phases: ['create'], reason: 'initial', create: true });
    expect(kinds(plan.layout)).toEqual(['generate', undefined]);
    expect(plan.layout.retired).toEqual([]);
  });

  it('adopts an empty placeholder CA Secret (update at its version, not create)', () => {
    const placeholder: SecretState = { data: { 'ca.crt': '', 'ca.key': '' }, ownership: 'placeholder', annotations: {}, version: '3' };
    expect(planCaRotation(input(T0, { caSecret: placeholder })).change).toMatchObject({ phases: ['create'], create: false, base: '3' });
  });

  it('a foreign CA Secret is a conflict: nothing is planned', () => {
    const plan = planCaRotation(input(T0, { caSecret: { ...caSecret({ active }), ownership: 'foreign' } }));
    expect(plan.conflict).toMatch(/not written by this installation/);
    expect(plan.change).toBeUndefined();
    expect(plan.layout.active).toBeUndefined();
  });
});

describe('CA rotation: prepare', () => {
  it('nothing to do before the lookahead; the prepare instant is announced', () => {
    const prepareAt = active.certificate.notAfter - policy.caLookahead;
    const plan = planCaRotation(input(prepareAt - 1, { caSecret: caSecret({ active }) }));
    expect(plan.change).toBeUndefined();
    expect(plan.dueAt).toContain(prepareAt);
    expect(plan.status).toEqual({ active: active.certificate.notAfter, next: undefined, retired: [] });
  });

  it('at active.notAfter − caLookahead: generates next (reason expiring); the active CA keeps signing', () => {
    const plan = planCaRotation(input(active.certificate.notAfter - policy.caLookahead, { caSecret: caSecret({ active }) }));
    expect(plan.change).toMatchObject({ phases: ['prepare'], reason: 'expiring', create: false, base: '7' });
    expect(kinds(plan.layout)).toEqual(['existing', 'generate']);
  });

  it('a forced request prepares at once and is acknowledged in the write', () => {
    const secret = caSecret({ active }, { annotations: { 'eso-mtls.io/rotate': 'r1' } });
    const plan = planCaRotation(input(T0 + days(1), { caSecret: secret }));
    expect(plan.change).toMatchObject({ phases: ['prepare'], reason: 'forced', annotations: { 'eso-mtls.io/rotate-acknowledged': 'r1' } });
    const acknowledged = caSecret({ active }, { annotations: { 'eso-mtls.io/rotate': 'r1', 'eso-mtls.io/rotate-acknowledged': 'r1' } });
    expect(planCaRotation(input(T0 + days(1), { caSecret: acknowledged })).change).toBeUndefined();
  });

  it('an unreadable next CA is replaced (reason invalid)', () => {
    const secret = caSecret({ active });
    const plan = planCaRotation(input(T0 + days(1), { caSecret: { ...secret, data: { ...secret.data, 'next.crt': 'garbage', 'next.key': 'x' } } }));
    expect(plan.change).toMatchObject({ phases: ['prepare'], reason: 'invalid' });
  });
});

describe('CA rotation: activate', () => {
  const secret = (): SecretState => caSecret({ active, next });
  const activationAt = (): number => next.certificate.notBefore + policy.notBeforeBackdate + 1000 + policy.propagationDelay;

  it('waits for propagationDelay after next was published', () => {
    const plan = planCaRotation(input(activationAt() - 1, { caSecret: secret(), bundles: [held(active.certificate, next.certificate)] }));
    expect(plan.change).toBeUndefined();
    expect(plan.dueAt).toContain(activationAt());
    expect(plan.layout.next).toBeDefined();
  });

  it('then activates: active := next, the old active is retired (still trusted)', () => {
    const plan = planCaRotation(input(activationAt(), { caSecret: secret(), bundles: [held(active.certificate, next.certificate)] }));
    expect(plan.change?.phases).toEqual(['activate']);
    expect(plan.change?.reason).toBeUndefined();
    expect(plan.layout.active).toEqual({ kind: 'existing', keyed: { certificate: next.certificate, privateKeyPem: next.privateKeyPem } });
    expect(plan.layout.next).toBeUndefined();
    expect(plan.layout.retired).toEqual([active.certificate]);
  });

  it('waits until every bundle has held next for propagationDelay since it was last written', () => {
    const writtenAt = activationAt() + minutes(7);
    const bundles = [held(active.certificate, next.certificate), { ...held(active.certificate, next.certificate), writtenAt }];
    const at = writtenAt + 1000 + policy.propagationDelay;
    const early = planCaRotation(input(at - 1, { caSecret: secret(), bundles }));
    expect(early.change).toBeUndefined();
    expect(early.dueAt).toContain(at);
    expect(planCaRotation(input(at, { caSecret: secret(), bundles })).change?.phases).toEqual(['activate']);
    // A stamp in the future is not believed (it would hold activation back until the deadline).
    const bogus = [{ ...held(active.certificate, next.certificate), writtenAt: activationAt() + days(30) }];
    expect(planCaRotation(input(activationAt(), { caSecret: secret(), bundles: bogus })).change?.phases).toEqual(['activate']);
  });

  it('does not activate while a managed bundle lacks next, until the deadline', () => {
    const stale = { caSecret: secret(), bundles: [held(active.certificate, next.certificate), held(active.certificate), {}] };
    const deadline = active.certificate.notAfter - policy.leafLookahead - policy.leafJitter;
    const waiting = planCaRotation(input(activationAt() + days(1), stale));
    expect(waiting.change).toBeUndefined();
    expect(waiting.dueAt).toContain(deadline);
    const forced = planCaRotation(input(deadline, stale));
    expect(forced.change?.phases).toEqual(['activate']);
    expect(forced.change?.message).toMatch(/deadline/);
  });
});

describe('CA rotation: retire', () => {
  const secret = (): SecretState => caSecret({ active, retired: [old.certificate] });

  it('keeps a retired CA while a leaf in use is signed by it', () => {
    const plan = planCaRotation(input(T0 + days(101), { caSecret: secret(), leavesInUse: [leafOld, leafActive] }));
    expect(plan.change).toBeUndefined();
    expect(plan.layout.retired).toEqual([old.certificate]);
  });

  it('drops it propagationDelay + maxConnectionAge after the last replacement, not before', () => {
    const retireAt = leafActive.certificate.notBefore + policy.notBeforeBackdate + 1000 + policy.propagationDelay + policy.maxConnectionAge;
    const before = planCaRotation(input(retireAt - 1, { caSecret: secret(), leavesInUse: [leafActive] }));
    expect(before.change).toBeUndefined();
    expect(before.dueAt).toContain(retireAt);
    const at = planCaRotation(input(retireAt, { caSecret: secret(), leavesInUse: [leafActive] }));
    expect(at.change?.phases).toEqual(['retire']);
    expect(at.layout.retired).toEqual([]);
    expect(kinds(at.layout)).toEqual(['existing', undefined]);
  });

  it('drops an expired retired CA at once', () => {
    const expired = planCaRotation(input(old.certificate.notAfter, { caSecret: secret(), leavesInUse: [leafOld] }));
    expect(expired.change?.phases).toEqual(['retire']);
  });
});

describe('CA rotation: recovery', () => {
  it('CA Secret gone: the client bundle (ESO namespace) keeps the old CA trusted; a new CA is published as next, none signs yet', () => {
    const inUse = [leafActive, leafOld];
    const plan = planCaRotation(input(T0 + days(101), { clientBundle: [active.certificate, old.certificate], leavesInUse: inUse }));
    expect(plan.change).toMatchObject({ phases: ['recover'], reason: 'secret_missing', create: true });
    expect(kinds(plan.layout)).toEqual([undefined, 'generate']);
    expect(plan.layout.retired).toEqual([active.certificate, old.certificate]);
  });

  it('recovered certificates nothing in use depends on are not kept: then it is a plain create', () => {
    const plan = planCaRotation(input(T0 + days(101), { clientBundle: [active.certificate, old.certificate], leavesInUse: [leafActive] }));
    expect(plan.layout.retired).toEqual([active.certificate]);
    const none = planCaRotation(input(T0 + days(101), { clientBundle: [active.certificate, old.certificate] }));
    expect(none.change).toMatchObject({ phases: ['create'], reason: 'secret_missing' });
  });

  it('unreadable CA key: the readable certificate stays trusted as retired (reason invalid)', () => {
    const secret = caSecret({ active });
    const broken = { ...secret, data: { ...secret.data, 'ca.key': '-----BEGIN PRIVATE KEY-----\nAAAA\n-----END PRIVATE KEY-----\n' } };
    const plan = planCaRotation(input(T0 + days(101), { caSecret: broken, leavesInUse: [leafActive] }));
    expect(plan.change).toMatchObject({ phases: ['recover'], reason: 'invalid', create: false, base: '7' });
    expect(plan.layout.retired).toEqual([active.certificate]);
    expect(kinds(plan.layout)).toEqual([undefined, 'generate']);
  });

  it('nothing readable and nothing in the client bundle: create (reason invalid)', () => {
    const garbage: SecretState = { data: { 'ca.crt': 'garbage', 'ca.key': 'garbage' }, ownership: 'managed', annotations: {} };
    expect(planCaRotation(input(T0, { caSecret: garbage })).change).toMatchObject({ phases: ['create'], reason: 'invalid' });
  });

  it('after recovery, next activates once published and in every bundle; the lost CA stays retired', () => {
    const recovering = caSecret({ next, retired: [active.certificate] });
    const at = next.certificate.notBefore + policy.notBeforeBackdate + 1000 + policy.propagationDelay;
    const plan = planCaRotation(input(at, { caSecret: recovering, bundles: [held(next.certificate, active.certificate)], leavesInUse: [leafActive] }));
    expect(plan.change?.phases).toEqual(['activate']);
    expect(plan.layout.retired).toEqual([active.certificate]);
    const early = planCaRotation(input(at - 1, { caSecret: recovering, bundles: [held(next.certificate, active.certificate)], leavesInUse: [leafActive] }));
    expect(early.change).toBeUndefined();
    expect(early.layout.active).toBeUndefined();
  });
});

describe('CA rotation: emergency', () => {
  it('a new active CA at once; next and every retired CA leave at once', () => {
    const secret = caSecret({ active, next, retired: [old.certificate] }, { annotations: { 'eso-mtls.io/rotate': 'emergency' } });
    const plan = planCaRotation(input(T0 + days(101), { caSecret: secret, leavesInUse: [leafOld] }));
    expect(plan.emergency).toBe(true);
    expect(plan.change).toMatchObject({ phases: ['emergency'], reason: 'forced', annotations: { 'eso-mtls.io/rotate-acknowledged': 'emergency' } });
    expect(kinds(plan.layout)).toEqual(['generate', undefined]);
    expect(plan.layout.retired).toEqual([]);
  });

  it('emergency:<token> asks again; an acknowledged emergency does nothing', () => {
    const again = caSecret({ active }, { annotations: { 'eso-mtls.io/rotate': 'emergency:2', 'eso-mtls.io/rotate-acknowledged': 'emergency' } });
    expect(planCaRotation(input(T0 + minutes(1), { caSecret: again })).emergency).toBe(true);
    const done = caSecret({ active }, { annotations: { 'eso-mtls.io/rotate': 'emergency', 'eso-mtls.io/rotate-acknowledged': 'emergency' } });
    expect(planCaRotation(input(T0 + minutes(1), { caSecret: done })).change).toBeUndefined();
  });
});
