// The classifier of a CertificateRequest's status, on statuses shaped as cert-manager writes them
// (the real-controller cases are in cert-manager.test.ts): each state from its conditions, final
// states first, and the PEM bound.
import { describe, expect, it } from '@jest/globals';
import { classifyCaRequest } from '../../src/upstream/certificate-request-status.js';
import { MAX_UPSTREAM_PEM_BYTES } from '../../src/upstream/pem-bound.js';

const WHAT = 'CertificateRequest eso/eso-mtls-ca-0123456789';
const T0 = '2026-11-29T09:00:00Z';
const T1 = '2026-11-29T09:01:00Z';
const PEM = '-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n';
const b64 = (text: string): string => Buffer.from(text).toString('base64');
const condition = (type: string, status: string, reason?: string, message?: string, at = T1) => ({ type, status, reason, message, lastTransitionTime: at });

describe('classifyCaRequest', () => {
  it('a request no one has looked at is pending since its creation', () => {
    expect(classifyCaRequest(undefined, T0, WHAT)).toEqual({
      state: 'pending',
      since: Date.parse(T0),
      reason: undefined,
      message: `${WHAT} waits for an approver`,
    });
  });

  it('Approved, then Ready=False Pending (the issuer not ready): approved, with what the signer said', () => {
    const status = {
      conditions: [
        condition('Approved', 'True', 'cert-manager.io', 'approved by cert-manager', T0),
        condition('Ready', 'False', 'Pending', 'Referenced issuer does not have a Ready status condition'),
      ],
    };
    expect(classifyCaRequest(status, T0, WHAT)).toMatchObject({
      state: 'approved',
      since: Date.parse(T1),
      reason: 'Pending',
      message: 'Referenced issuer does not have a Ready status condition',
    });
  });

  it("Denied wins over everything, with the approver's message", () => {
    const status = {
      conditions: [
        condition('Denied', 'True', 'policy.example', 'not in the allowed subjects'),
        condition('Ready', 'False', 'Denied', 'The CertificateRequest was denied by an approval controller'),
      ],
    };
    expect(classifyCaRequest(status, T0, WHAT)).toMatchObject({
      state: 'denied',
      reason: 'policy.example',
      message: 'not in the allowed subjects',
      since: Date.parse(T1),
    });
  });

  it('InvalidRequest and Ready=False Failed are failed; Ready=False Pending is not', () => {
    const approved = condition('Approved', 'True', 'cert-manager.io', 'ok', T0);
    expect(classifyCaRequest({ conditions: [approved, condition('InvalidRequest', 'True', 'BadConfig', 'isCA not allowed')] }, T0, WHAT)).toMatchObject({
      state: 'failed',
      reason: 'BadConfig',
      message: 'isCA not allowed',
    });
    expect(classifyCaRequest({ conditions: [approved, condition('Ready', 'False', 'Failed', 'signing failed')] }, T0, WHAT)).toMatchObject({
      state: 'failed',
      reason: 'Failed',
      message: 'signing failed',
    });
    expect(classifyCaRequest({ conditions: [approved, condition('Ready', 'False', 'Pending', 'waiting')] }, T0, WHAT).state).toBe('approved');
  });

  it('Ready=True Issued gives the certificate and the CA as PEM', () => {
    const status = {
      conditions: [condition('Approved', 'True'), condition('Ready', 'True', 'Issued', 'Certificate fetched from issuer successfully')],
      certificate: b64(PEM + PEM),
      ca: b64(PEM),
    };
    expect(classifyCaRequest(status, T0, WHAT)).toEqual({
      state: 'issued',
      since: Date.parse(T1),
      reason: 'Issued',
      message: 'Certificate fetched from issuer successfully',
      certificatePem: PEM + PEM,
      caPem: PEM,
    });
    expect(classifyCaRequest({ ...status, ca: undefined }, T0, WHAT)).not.toHaveProperty('caPem');
  });

  it('issued with an empty or non-PEM certificate: unreadable, nothing given', () => {
    const ready = condition('Ready', 'True', 'Issued');
    expect(classifyCaRequest({ conditions: [ready] }, T0, WHAT)).toMatchObject({ state: 'issued', refusal: { reason: 'unreadable' } });
    const garbage = classifyCaRequest({ conditions: [ready], certificate: b64('not a certificate') }, T0, WHAT);
    expect(garbage).toMatchObject({ state: 'issued', refusal: { reason: 'unreadable', message: `${WHAT} status.certificate is not PEM` } });
    expect(garbage).not.toHaveProperty('certificatePem');
  });

  it('over 1 MiB of PEM in status.certificate or status.ca: too_large, neither decoded', () => {
    const ready = condition('Ready', 'True', 'Issued');
    const big = 'A'.repeat(Math.ceil(((MAX_UPSTREAM_PEM_BYTES + 1) * 4) / 3) + 4); // base64 of just over the bound
    for (const status of [
      { conditions: [ready], certificate: big },
      { conditions: [ready], certificate: b64(PEM), ca: big },
      { conditions: [ready], certificate: b64('x'.repeat(5 * 1024 * 1024)) },
    ]) {
      const classified = classifyCaRequest(status, T0, WHAT);
      expect(classified).toMatchObject({ state: 'issued', refusal: { reason: 'too_large' } });
      expect(classified.refusal?.message).toMatch(/holds \d+ bytes, over the limit of 1048576 bytes of PEM: not read/);
      expect(classified).not.toHaveProperty('certificatePem');
      expect(classified).not.toHaveProperty('caPem');
    }
    // Exactly at the bound is taken.
    const atBound = classifyCaRequest({ conditions: [ready], certificate: b64(PEM + 'x'.repeat(MAX_UPSTREAM_PEM_BYTES - PEM.length)) }, T0, WHAT);
    expect(atBound.certificatePem?.length).toBe(MAX_UPSTREAM_PEM_BYTES);
  });
});
