import { describe, expect, it } from '@jest/globals';
import type { PeerCertificate } from 'node:tls';
import { peerIdentity, type PeerIdentity } from '@eso-mtls/grpc';
import { clientIdentityMismatch } from '../src/server/identity.js';

const CLIENT_AUTH = '1.3.6.1.5.5.7.3.2';
const SERVER_AUTH = '1.3.6.1.5.5.7.3.1';
const peer = (over: Partial<PeerIdentity> = {}): PeerIdentity => ({
  subjectCommonName: 'external-secrets-core',
  uris: ['spiffe://cluster.local/ns/eso/sa/eso'],
  serialNumber: '0a',
  extendedKeyUsage: [CLIENT_AUTH],
  ...over,
});

describe('peerIdentity reads what Node reports of a verified certificate', () => {
  it('common name, URI SANs (quoted ones decoded), lower-case serial and EKU', () => {
    const cert = {
      subject: { CN: 'external-secrets-core' },
      subjectaltname: 'DNS:a.example, URI:spiffe://cluster.local/ns/eso/sa/eso, URI:"https://x.example/a,b", IP Address:127.0.0.1',
      serialNumber: '7F00AB',
      ext_key_usage: [CLIENT_AUTH],
    } as unknown as PeerCertificate;
    expect(peerIdentity(cert)).toEqual({
      subjectCommonName: 'external-secrets-core',
      uris: ['spiffe://cluster.local/ns/eso/sa/eso', 'https://x.example/a,b'],
      serialNumber: '7f00ab',
      extendedKeyUsage: [CLIENT_AUTH],
    });
  });

  it('a certificate without subjectAltName or EKU has none', () => {
    expect(peerIdentity({ subject: { CN: ['a', 'b'] }, serialNumber: '01' } as unknown as PeerCertificate)).toEqual({
      subjectCommonName: 'a',
      uris: [],
      serialNumber: '01',
      extendedKeyUsage: [],
    });
  });
});

describe('clientIdentityMismatch', () => {
  it('accepts ESO core by default and with its SPIFFE ID', () => {
    expect(clientIdentityMismatch(peer(), {})).toBeUndefined();
    expect(clientIdentityMismatch(peer(), { spiffeId: 'spiffe://cluster.local/ns/eso/sa/eso' })).toBeUndefined();
  });

  it('false skips the name checks but never the clientAuth purpose', () => {
    expect(clientIdentityMismatch(peer({ subjectCommonName: 'batch-job' }), false)).toBeUndefined();
    expect(clientIdentityMismatch(peer({ extendedKeyUsage: [SERVER_AUTH] }), false)).toBe(
      'client certificate (serial 0a) lacks extendedKeyUsage clientAuth; presented [serverAuth]',
    );
  });

  it('names required and presented values', () => {
    expect(clientIdentityMismatch(peer({ subjectCommonName: undefined }), {})).toBe(
      'client certificate subject CN null (serial 0a) is not the required "external-secrets-core"',
    );
    expect(clientIdentityMismatch(peer({ subjectCommonName: 'x' }), { commonName: 'x', spiffeId: 'spiffe://other' })).toBe(
      'client certificate (serial 0a) does not carry the required URI SAN spiffe://other; presented [spiffe://cluster.local/ns/eso/sa/eso]',
    );
  });
});
