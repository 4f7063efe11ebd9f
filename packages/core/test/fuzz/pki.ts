/**
 * The certificates the fuzz suites mutate, issued once by the core and kept in examples/pki.json
 * (issued at test/support's NOW), so that a seed fast-check prints replays the same bytes: keys
 * generated at run time would differ every run.
 */
import { readFileSync } from 'node:fs';
import { type KeyedCertificate, parseCertificate } from '@eso-mtls/core';

interface Stored {
  readonly certificate: string;
  readonly privateKey: string;
}

const stored = JSON.parse(readFileSync(new URL('examples/pki.json', import.meta.url), 'utf8')) as Record<'ca' | 'server' | 'client' | 'rsaServer', Stored>;
const keyed = (s: Stored): KeyedCertificate => ({ certificate: parseCertificate(s.certificate), privateKeyPem: s.privateKey });

/** A P-256 CA and three leaves it signed: a server leaf, the client leaf, and an RSA-2048 server leaf. */
export const pki = {
  ca: keyed(stored.ca),
  server: keyed(stored.server),
  client: keyed(stored.client),
  rsaServer: keyed(stored.rsaServer),
} as const;

/** Every certificate of {@link pki}. */
export const allIssued: readonly KeyedCertificate[] = [pki.ca, pki.server, pki.client, pki.rsaServer];
