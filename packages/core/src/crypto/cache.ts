import type { CertificateView, KeyedCertificate } from '../x509/certificate.js';
import { CaKeyUnavailableError, type SignatureVerifier } from './crypto.js';
import { equalBytes } from '../x509/der.js';
import { CertificateParseError, parseCertificate, splitPemCertificates } from '../x509/parse.js';
import type { SignatureCheck } from '../x509/signature-check.js';

/**
 * How a stored private key relates to a certificate. `unavailable`: a key reference whose signer
 * cannot tell now (see {@link CaKeyUnavailableError}); not remembered, so the next check asks again.
 */
export type KeyCheck = 'match' | 'mismatch' | 'unreadable' | 'unavailable';

/** Options of a {@link CertificateCache}. */
export interface CertificateCacheOptions {
  /** Most entries kept per memo table; the oldest entries are dropped first. Default 50,000. */
  readonly maxEntries?: number;
}

/** Work done (not cache hits), for tests and benchmarks. */
export interface CertificateCacheStats {
  /** PEM certificates parsed (cache misses). */
  parses: number;
  /** Signatures verified (cache misses). */
  verifications: number;
  /** Certificate and private key pairs checked (cache misses). */
  keyChecks: number;
  /** Entries dropped to stay within the bound. */
  evictions: number;
}

/** Default bound: room for the leaves, bundles and keys of several thousand namespaces. */
export const DEFAULT_CACHE_ENTRIES = 50_000;

/** The entries under one first key: a single one (the usual case), or a Map once there are several. */
type Inner<V> = { readonly b: string; readonly value: V } | Map<string, V>;

/**
 * A bounded memo table keyed by one or two strings. Map iteration follows insertion order, so the
 * first key is the oldest entry; dropping it is enough to stay bounded.
 */
class Memo<V> {
  private readonly table = new Map<string, V | Inner<V>>();
  private size = 0;
  constructor(
    private max: number,
    private readonly onEvict: (n: number) => void,
  ) {}

  /** Raises the bound to `max` when that is higher; never lowers it. */
  raise(max: number): void {
    if (max > this.max) this.max = max;
  }

  get(a: string, b?: string): V | undefined {
    const hit = this.table.get(a);
    if (b === undefined) return hit as V | undefined;
    const inner = hit as Inner<V> | undefined;
    return inner instanceof Map ? inner.get(b) : inner?.b === b ? inner.value : undefined;
  }

  set(a: string, value: V, b?: string): void {
    if (b === undefined) {
      this.table.set(a, value);
    } else {
      // Nested entries reuse each PEM string's cached hash instead of hashing a concatenated key.
      // A leaf meets one key and one CA: a Map per leaf (some 300 bytes) only when it meets more.
      const inner = this.table.get(a) as Inner<V> | undefined;
      if (inner instanceof Map) inner.set(b, value);
      else if (inner === undefined || inner.b === b) this.table.set(a, { b, value });
      else
        this.table.set(
          a,
          new Map([
            [inner.b, inner.value],
            [b, value],
          ]),
        );
    }
    this.size++;
    while (this.size > this.max) {
      const [oldest, entry] = this.table.entries().next().value as [string, V | Inner<V>];
      this.table.delete(oldest);
      const dropped = b === undefined || !(entry instanceof Map) ? 1 : entry.size;
      this.size -= dropped;
      this.onEvict(dropped);
    }
  }
}

/**
 * Parses and verifications, remembered. Owned by the caller (never module state) and bounded, so
 * a resync over thousands of unchanged Secrets re-verifies nothing: verifying leaves is the hot
 * path of planning.
 */
export class CertificateCache {
  /** Counters of work actually done (cache misses). */
  readonly stats: CertificateCacheStats = { parses: 0, verifications: 0, keyChecks: 0, evictions: 0 };
  private readonly parsed: Memo<CertificateView | CertificateParseError>;
  private readonly bundles: Memo<readonly CertificateView[] | CertificateParseError>;
  private readonly signatures: Memo<boolean>;
  private readonly keys: Memo<KeyCheck>;

  /** `verifier` checks signatures and reads private keys; see {@link CertificateCacheOptions}. */
  constructor(
    private readonly verifier: SignatureVerifier,
    options: CertificateCacheOptions = {},
  ) {
    const max = options.maxEntries ?? DEFAULT_CACHE_ENTRIES;
    if (!Number.isInteger(max) || max < 1) throw new RangeError(`maxEntries must be a positive integer, got ${max}`);
    const onEvict = (n: number): void => {
      this.stats.evictions += n;
    };
    this.parsed = new Memo(max, onEvict);
    this.bundles = new Memo(max, onEvict);
    this.signatures = new Memo(max, onEvict);
    this.keys = new Memo(max, onEvict);
  }

  /**
   * Raises every table's bound to at least `entries`, never lowering it. A resync visits its
   * entries in the same order each time, so a bound below the live set drops each entry just
   * before its next use and every plan re-parses and re-verifies everything; the planner reserves
   * room for the namespaces it plans.
   */
  reserve(entries: number): void {
    if (!Number.isSafeInteger(entries) || entries < 1) return;
    for (const table of [this.parsed, this.bundles, this.signatures, this.keys]) table.raise(entries);
  }

  /** {@link parseCertificate}, memoised by exact input text (errors too). Throws CertificateParseError. */
  parse(pem: string): CertificateView {
    let result = this.parsed.get(pem);
    if (result === undefined) {
      this.stats.parses++;
      try {
        result = parseCertificate(pem);
      } catch (e) {
        result = e instanceof CertificateParseError ? e : new CertificateParseError(String(e));
      }
      this.parsed.set(pem, result);
    }
    if (result instanceof CertificateParseError) throw result;
    return result;
  }

  /** {@link splitPemCertificates} then {@link parse} of each, memoised by exact text. Throws CertificateParseError. */
  parseBundle(text: string): readonly CertificateView[] {
    let result = this.bundles.get(text);
    if (result === undefined) {
      try {
        result = Object.freeze(
          splitPemCertificates(text).map((pem, i) => {
            try {
              return this.parse(pem);
            } catch (e) {
              throw new CertificateParseError(`certificate ${i + 1} of the bundle: ${(e as Error).message}`);
            }
          }),
        );
      } catch (e) {
        result = e instanceof CertificateParseError ? e : new CertificateParseError(String(e));
      }
      this.bundles.set(text, result);
    }
    if (result instanceof CertificateParseError) throw result;
    return result;
  }

  /**
   * True when `ca` signed `leaf`: leaf issuer DN equals ca subject, leaf AKI equals ca SKI when
   * both are present, ca is a CA, and the signature verifies. No time check. Memoised per
   * (leaf.pem, ca.pem), so a pair already verified is never verified again.
   */
  isSignedBy(leaf: CertificateView, ca: CertificateView): boolean {
    let result = this.signatures.get(leaf.pem, ca.pem);
    if (result === undefined) {
      result = this.checkSignedBy(leaf, ca);
      this.signatures.set(leaf.pem, result, ca.pem);
    }
    return result;
  }

  private checkSignedBy(leaf: CertificateView, ca: CertificateView): boolean {
    if (leaf.issuer !== ca.subject || !ca.isCa) return false;
    if (leaf.authorityKeyIdentifier !== undefined && ca.subjectKeyIdentifier !== undefined && leaf.authorityKeyIdentifier !== ca.subjectKeyIdentifier)
      return false;
    this.stats.verifications++;
    try {
      return this.verifier.verify(ca.subjectPublicKeyInfo, leaf.signatureAlgorithm, leaf.tbsCertificate, leaf.signatureValue);
    } catch {
      return false;
    }
  }

  /** The signature check of the verifier this cache was made with, for verifyChain. */
  get signatureCheck(): SignatureCheck {
    return this.verifier;
  }

  /** Whether the stored key `privateKeyPem` is the private half of `certificate`'s public key. Memoised. */
  checkKey(certificate: CertificateView, privateKeyPem: string): KeyCheck {
    let result = this.keys.get(certificate.pem, privateKeyPem);
    if (result === undefined) {
      this.stats.keyChecks++;
      let spki: Uint8Array | undefined;
      try {
        spki = this.verifier.publicKeyOf(privateKeyPem);
      } catch (e) {
        if (e instanceof CaKeyUnavailableError) return 'unavailable';
        spki = undefined;
      }
      result = spki === undefined ? 'unreadable' : equalBytes(spki, certificate.subjectPublicKeyInfo) ? 'match' : 'mismatch';
      this.keys.set(certificate.pem, result, privateKeyPem);
    }
    return result;
  }

  /**
   * Records what is already known of a certificate just issued: its parse, that its key matches,
   * and that `issuer` signed it. Observing the Secret it is written to then costs no parsing,
   * no key check and no verification (a key check alone takes ~0.3 ms with OpenSSL 3).
   */
  remember(issued: KeyedCertificate, issuer?: CertificateView): void {
    const { certificate, privateKeyPem } = issued;
    if (this.parsed.get(certificate.pem) === undefined) this.parsed.set(certificate.pem, certificate);
    if (this.keys.get(certificate.pem, privateKeyPem) === undefined) this.keys.set(certificate.pem, 'match', privateKeyPem);
    if (issuer && this.signatures.get(certificate.pem, issuer.pem) === undefined) {
      this.signatures.set(certificate.pem, this.checkSignedBy(certificate, issuer), issuer.pem);
    }
  }

  /** The private key's public half equals the certificate's SubjectPublicKeyInfo. Memoised. */
  keyMatches(certificate: CertificateView, privateKeyPem: string): boolean {
    return this.checkKey(certificate, privateKeyPem) === 'match';
  }
}
