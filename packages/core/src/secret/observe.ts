import type { CertificateCache } from '../crypto/cache.js';
import type { CertificateView, KeyedCertificate } from '../x509/certificate.js';
import { textOf } from '../x509/pem.js';
import { type DataProblem, type Observed } from '../common/observed.js';
import type { Instant } from '../common/time.js';
import { truncate } from '../common/truncate.js';
import { rsaExponentRefusal } from '../x509/rsa-public-key.js';
import { pathBreak } from '../x509/ca-path.js';

/** The data of a Kubernetes Secret: raw bytes, or text (e.g. from stringData), per key. */
export type SecretData = Readonly<Record<string, Uint8Array | string | undefined>>;

/** Keys of the Secrets the core reads and writes. */
export const SecretKeys = {
  /** Leaf Secret: the leaf certificate, exactly one. */
  certificate: 'tls.crt',
  /** Leaf Secret: the leaf's PKCS#8 private key. */
  privateKey: 'tls.key',
  /** Leaf Secret: the trust bundle. CA Secret: the active CA certificate. */
  caCertificate: 'ca.crt',
  /** CA Secret: the active CA's private key. */
  caPrivateKey: 'ca.key',
  /** CA Secret: the next CA, published in bundles but not signing yet. */
  nextCertificate: 'next.crt',
  nextPrivateKey: 'next.key',
  /**
   * CA Secret: in place of ca.key / next.key, a reference to a key held by a CaSigner
   * (an HSM or KMS): the Secret then holds no key material at all.
   */
  caKeyReference: 'ca.key-ref',
  nextKeyReference: 'next.key-ref',
  /** CA Secret: previous CA certificates, still trusted in bundles; their keys are discarded. */
  retiredCertificates: 'retired.crt',
} as const;

/** What a leaf Secret (tls.crt, tls.key, ca.crt) holds. */
export interface ObservedLeafSecret {
  /** tls.crt (exactly one certificate) with tls.key. */
  readonly leaf: Observed<KeyedCertificate>;
  /** ca.crt: one or more CA certificates. */
  readonly bundle: Observed<readonly CertificateView[]>;
  /** ca.crt exactly as stored (decoded to text), '' if absent, to compare with the expected bundle. */
  readonly bundleText: string;
}

/** What the CA Secret holds; each part is undefined when all of its keys are absent or empty. */
export interface ObservedCaSecret {
  /** ca.crt / ca.key: the CA that signs. */
  readonly active: Observed<KeyedCertificate> | undefined;
  /** next.crt / next.key: published in bundles, not signing yet. */
  readonly next: Observed<KeyedCertificate> | undefined;
  /** retired.crt: earlier CA certificates, still trusted, keys discarded. */
  readonly retired: Observed<readonly CertificateView[]> | undefined;
}

/** A managed Secret's ca.crt: its certificates (undefined: unreadable) and when we last wrote it, if known. */
export interface ObservedBundle {
  /** The CA certificates it holds; undefined when unreadable. */
  readonly certificates?: readonly CertificateView[];
  /** When we last wrote it, if known. */
  readonly writtenAt?: Instant;
  /**
   * A provider namespace's only: since when our writes to it have been refused for a reason
   * retrying cannot change (immutable, or refused by the apiserver); see ca/left-behind.ts.
   */
  readonly refusedSince?: Instant;
}

/**
 * Annotation on the leaf Secrets we write: since when their ca.crt has held every certificate it
 * holds (RFC 3339), set by each write that adds one. The next CA signs only once every bundle has
 * held it for propagationDelay since that instant.
 */
export const BUNDLE_WRITTEN_AT_ANNOTATION = 'eso-mtls.io/bundle-written-at';

/** The longest detail: a Secret's values are the tenant's, and a detail ends up in Events, logs and status. */
const MAX_DETAIL = 1024;

const problem = (p: DataProblem, detail: string): { readonly ok: false; readonly problem: DataProblem; readonly detail: string } => ({
  ok: false,
  problem: p,
  detail: truncate(detail, MAX_DETAIL),
});

/** Text of one value; throws for values of any other type (bad input from an adapter). */
function read(data: SecretData, key: string): string {
  const value: unknown = data[key];
  if (value === undefined || value === null) return '';
  if (typeof value === 'string' || value instanceof Uint8Array) return textOf(value);
  throw new Error(`the value of ${key} is a ${typeof value}, not bytes or text`);
}

const isBlank = (s: string): boolean => s.trim() === '';

/** Runs `observe`; bad input must never make observing throw, so anything unforeseen is garbage. */
function guarded<T>(what: string, observe: () => Observed<T>): Observed<T> {
  try {
    return observe();
  } catch (e) {
    return problem('garbage_pem', `${what}: ${(e as Error).message}`);
  }
}

/** One certificate + key pair stored under `certKey` / `keyKey`. */
function observePair(data: SecretData, certKey: string, keyKey: string, cache: CertificateCache, expectCa: boolean): Observed<KeyedCertificate> {
  return guarded(certKey, () => {
    const certText = read(data, certKey);
    const keyText = read(data, keyKey);
    if (isBlank(certText) && isBlank(keyText)) return problem('empty', `${certKey} and ${keyKey} are absent or empty`);
    if (isBlank(certText)) return problem('missing_certificate', `${keyKey} is present but ${certKey} is absent or empty`);
    let certificates: readonly CertificateView[];
    try {
      certificates = cache.parseBundle(certText);
    } catch (e) {
      return problem('garbage_pem', `${certKey}: ${(e as Error).message}`);
    }
    const certificate = certificates[0]!;
    if (expectCa && !certificate.isCa) {
      return problem('not_a_ca', `${certKey} holds ${certificate.subject}, which is not a CA (no basicConstraints cA)`);
    }
    const chain = certificates.slice(1);
    const notAPath = chain.length > 0 ? chainProblem(certKey, certificates, expectCa, cache) : undefined;
    if (notAPath !== undefined) return notAPath;
    if (expectCa && chain.length === 0 && !cache.isSignedBy(certificate, certificate)) return problem('garbage_pem', notSelfSigned(certKey, certificate));
    // We generate 65537 only: another exponent was put here by someone else, wherever the key is kept.
    const weak = rsaExponentRefusal(certificate.subjectPublicKeyInfo);
    if (weak !== undefined) return problem('weak_key', `${certKey} holds ${certificate.subject} (serial ${certificate.serialNumber}), ${weak}`);
    if (isBlank(keyText)) return problem('missing_key', `${certKey} is present but ${keyKey} is absent or empty`);
    switch (cache.checkKey(certificate, keyText)) {
      // 'unavailable': the signer holding the key cannot tell now; the reference stays the key, and signing with it fails loudly.
      case 'unavailable':
      case 'match':
        return { ok: true, value: chain.length > 0 ? { certificate, privateKeyPem: keyText, chain } : { certificate, privateKeyPem: keyText } };
      case 'unreadable':
        return problem('garbage_pem', `${keyKey} is not a readable private key`);
      case 'mismatch':
        return problem(
          'key_mismatch',
          `${keyKey} is not the private key of the certificate in ${certKey} (${certificate.subject}, serial ${certificate.serialNumber})`,
        );
    }
  });
}

/**
 * Why several certificates under `key` are not what it may hold, or undefined when they are. A
 * leaf's tls.crt may hold the leaf and then the intermediates above it, never a self-signed root
 * (peers hold the anchors). A CA slot may hold an intermediate and then its issuers, its trust
 * anchor last (docs/ca-rotation.md); a lone CA must be a self-signed root.
 */
function chainProblem(
  key: string,
  certificates: readonly CertificateView[],
  expectCa: boolean,
  cache: CertificateCache,
): ReturnType<typeof problem> | undefined {
  const expected = expectCa
    ? 'a CA, or an intermediate followed by its issuers up to its trust anchor'
    : 'exactly one certificate, or a leaf followed by the intermediates that issued it';
  const where = `${key} holds ${certificates.length} certificates where ${expected} is expected`;
  const chain = certificates.slice(1);
  const root = expectCa ? chain.slice(0, -1).findIndex(isSelfIssued) : chain.findIndex(isSelfIssued);
  if (root >= 0) return problem('multiple_certificates', `${where}: certificate ${root + 2} (${truncate(chain[root]!.subject)}) is self-issued`);
  if (expectCa && isSelfIssued(certificates[0]!)) return problem('multiple_certificates', `${where}: the first is self-issued`);
  const broken = pathBreak(certificates, (c, by) => cache.isSignedBy(c, by));
  if (broken !== undefined) return problem('multiple_certificates', `${where}: ${truncate(broken, 512)}`);
  const top = certificates.at(-1)!;
  if (expectCa && isSelfIssued(top) && !cache.isSignedBy(top, top)) return problem('garbage_pem', notSelfSigned(`the last certificate of ${key}`, top));
  return undefined;
}

const isSelfIssued = (c: CertificateView): boolean => c.subject === c.issuer;

/**
 * Every CA of the CA Secret is a self-signed root issued by the core: one whose signature no
 * longer verifies was damaged after it was signed, and may be unreadable to OpenSSL, so its
 * bundles and leaves would fail every handshake.
 */
const notSelfSigned = (where: string, c: CertificateView): string =>
  `${where} holds ${c.subject} (serial ${c.serialNumber}), whose self-signature does not verify: it was altered after it was signed`;

/** A bundle of one or more CA certificates stored under `key`; `selfSigned`: each must be a verifying root. */
function observeBundle(data: SecretData, key: string, cache: CertificateCache, selfSigned: boolean): Observed<readonly CertificateView[]> {
  return guarded(key, () => {
    const text = read(data, key);
    if (isBlank(text)) return problem('empty', `${key} is absent or empty`);
    let certificates: readonly CertificateView[];
    try {
      certificates = cache.parseBundle(text);
    } catch (e) {
      return problem('garbage_pem', `${key}: ${(e as Error).message}`);
    }
    const leaf = certificates.findIndex((c) => !c.isCa);
    if (leaf >= 0) {
      return problem('not_a_ca', `certificate ${leaf + 1} of ${key} (${certificates[leaf]!.subject}) is not a CA (no basicConstraints cA)`);
    }
    const damaged = selfSigned ? certificates.findIndex((c) => !cache.isSignedBy(c, c)) : -1;
    if (damaged >= 0) return problem('garbage_pem', notSelfSigned(`certificate ${damaged + 1} of ${key}`, certificates[damaged]!));
    return { ok: true, value: certificates };
  });
}

/** True when the Secret has no data, or only empty values. */
function allBlank(data: SecretData): boolean {
  try {
    return Object.keys(data).every((k) => isBlank(read(data, k)));
  } catch {
    return false;
  }
}

/**
 * Classifies a leaf Secret's data: tls.crt (exactly one certificate), tls.key, ca.crt (one or
 * more CA certificates). String values are PEM text; bytes are decoded as text. Never throws.
 */
export function observeLeafSecret(data: SecretData, cache: CertificateCache): ObservedLeafSecret {
  const bundleText = guardedText(data, SecretKeys.caCertificate);
  if (allBlank(data)) {
    const empty = problem('empty', 'the Secret has no data, or only empty values');
    return { leaf: empty, bundle: empty, bundleText };
  }
  return {
    leaf: observePair(data, SecretKeys.certificate, SecretKeys.privateKey, cache, false),
    bundle: observeBundle(data, SecretKeys.caCertificate, cache, false),
    bundleText,
  };
}

/**
 * Classifies the CA Secret's data: ca.crt/ca.key (active CA, exactly one CA certificate),
 * next.crt/next.key (next CA), retired.crt (earlier CA certificates). Each CA must be a root
 * whose self-signature verifies; an altered one is `garbage_pem`. Never throws.
 */
export function observeCaSecret(data: SecretData, cache: CertificateCache): ObservedCaSecret {
  const present = (...keys: string[]): boolean => keys.some((k) => !isBlank(guardedText(data, k)));
  const K = SecretKeys;
  const pair = (certKey: string, slot: 'active' | 'next'): Observed<KeyedCertificate> | undefined => {
    const keyKey = caKeyField(data, slot);
    if (!present(certKey, keyKey)) return undefined;
    const both = CA_KEY_FIELDS[slot];
    if (both.every((k) => present(k))) return problem('garbage_pem', `both ${both.join(' and ')} are set: a CA key is held in one place only`);
    return observePair(data, certKey, keyKey, cache, true);
  };
  return {
    active: pair(K.caCertificate, 'active'),
    next: pair(K.nextCertificate, 'next'),
    retired: present(K.retiredCertificates) ? observeBundle(data, K.retiredCertificates, cache, true) : undefined,
  };
}

/** Where each CA slot's key may be stored: as a PEM key, or as a reference to a CaSigner's key. */
const CA_KEY_FIELDS = {
  active: [SecretKeys.caPrivateKey, SecretKeys.caKeyReference],
  next: [SecretKeys.nextPrivateKey, SecretKeys.nextKeyReference],
} as const;

/** The data key holding a CA slot's key: the reference when only it is set, else the PEM key's. */
export function caKeyField(data: SecretData, slot: 'active' | 'next'): string {
  const [pem, reference] = CA_KEY_FIELDS[slot];
  return isBlank(guardedText(data, pem)) && !isBlank(guardedText(data, reference)) ? reference : pem;
}

function guardedText(data: SecretData, key: string): string {
  try {
    return read(data, key);
  } catch {
    return '';
  }
}
