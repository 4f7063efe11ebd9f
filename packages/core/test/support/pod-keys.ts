import { type KeyObject, generateKeyPairSync } from 'node:crypto';
import { readFileSync } from 'node:fs';
import type { PodKeyType } from '@eso-mtls/core';
import { openssl, type tempDir } from './fixtures.js';

// A kubelet's side of a pod certificate request, made with tools we did not write: its key pair
// from node:crypto (OpenSSL, as a kubelet's Go crypto would make one) and its stub PKCS#10 request
// from `openssl req`.

/** A key pair as node:crypto makes it. */
export type KeyPair = { readonly publicKey: KeyObject; readonly privateKey: KeyObject };

/** DER SubjectPublicKeyInfo of a key pair's public half. */
export const spkiOf = (pair: { readonly publicKey: KeyObject }): Uint8Array => new Uint8Array(pair.publicKey.export({ type: 'spki', format: 'der' }));

/** A generator for each of the six key types a kubelet can ask for (RSA-4096 takes a while on a loaded machine). */
export const POD_KEYS: Readonly<Record<PodKeyType, () => KeyPair>> = {
  RSA3072: () => generateKeyPairSync('rsa', { modulusLength: 3072 }),
  RSA4096: () => generateKeyPairSync('rsa', { modulusLength: 4096 }),
  ECDSAP256: () => generateKeyPairSync('ec', { namedCurve: 'P-256' }),
  ECDSAP384: () => generateKeyPairSync('ec', { namedCurve: 'P-384' }),
  ECDSAP521: () => generateKeyPairSync('ec', { namedCurve: 'P-521' }),
  ED25519: () => generateKeyPairSync('ed25519'),
};

/**
 * A DER stub PKCS#10 request for `pair`'s key, made as the facts document made them for
 * kube-apiserver: `openssl req -new -key K -subj <subject> <extra…> -outform DER`. The key is
 * written to `tmp` as `<name>.key` and the request kept there as `<name>.der`.
 */
export function stubRequest(tmp: ReturnType<typeof tempDir>, name: string, pair: KeyPair, subject = '/', ...extra: string[]): Uint8Array {
  const key = tmp.write(`${name}.key`, pair.privateKey.export({ type: 'pkcs8', format: 'pem' }) as string);
  const out = `${tmp.dir}/${name}.der`;
  const r = openssl(['req', '-new', '-key', key, '-subj', subject, ...extra, '-outform', 'DER', '-out', out]);
  if (r.status !== 0) throw new Error(`openssl req failed: ${r.output}`);
  return new Uint8Array(readFileSync(out));
}
