import type { CertificateView, KeyedCertificate } from '../x509/certificate.js';
import type { CryptoBackend, GeneratedKey, Signer } from './crypto.js';
import { encodeCommonNameDn, formatCommonNameDn } from '../x509/distinguished-name.js';
import { MAX_DNS_NAME_BYTES, dnsNamesBytes } from '../x509/name-budget.js';
import { CLIENT_COMMON_NAME, clientSpiffeId, isDnsName } from '../x509/names.js';
import { serialHex } from '../x509/certificate-reader.js';
import { fromHex, toHex } from '../x509/der.js';
import { CERTIFICATE_LABEL } from '../x509/parse.js';
import { encodePem } from '../x509/pem.js';
import type { KeyAlgorithm, Policy } from '../policy/policy.js';
import { truncateList } from '../common/truncate.js';
import {
  KeyUsage,
  authorityKeyIdentifierExtension,
  basicConstraintsExtension,
  encodeCertificate,
  encodeTbsCertificate,
  extendedKeyUsageExtension,
  type KeyFamily,
  keyFamilyOf,
  keyIdentifier,
  keyUsageExtension,
  signatureAlgorithmFor,
  subjectAltNameExtension,
  subjectKeyIdentifierExtension,
  subjectNameOf,
} from '../x509/tbs.js';
import { type Instant, truncateToSecond } from '../common/time.js';
import { pathNotAfter, servedIntermediates } from '../x509/ca-path.js';

/** Everything an issuance needs: injected crypto, the policy, and the time to issue at. */
export interface IssueContext {
  /** Key generation, signing and serial numbers. */
  readonly crypto: CryptoBackend;
  /** Validity, backdate, key algorithm and names. */
  readonly policy: Policy;
  /** The issuing instant; notBefore is backdated from it. */
  readonly now: Instant;
}

/** A freshly issued certificate with its private key, and the algorithm of that key. */
export interface Issued extends KeyedCertificate {
  /** The algorithm of the new key. */
  readonly keyAlgorithm: KeyAlgorithm;
}

/** Raised when a certificate cannot be issued as asked; the message names the value and the fix. */
export class IssueError extends Error {
  /** Always `IssueError`. */
  override readonly name = 'IssueError';
}

/** Octets of a serial number: 16 of them carry 126 random bits, well above RFC 5280's 20-octet cap. */
const SERIAL_OCTETS = 16;
// X.509 upper bound on a commonName (ub-common-name, RFC 5280 appendix A).
const MAX_COMMON_NAME = 64;

/**
 * A random positive serial: the top bit is cleared so the INTEGER is positive, and the next bit
 * set so the first octet is never zero, which keeps the DER encoding exactly 16 octets long.
 */
export function randomSerialNumber(random: CryptoBackend['random']): Uint8Array {
  const bytes = Uint8Array.from(random(SERIAL_OCTETS));
  if (bytes.length !== SERIAL_OCTETS) throw new IssueError(`the RandomSource returned ${bytes.length} bytes where ${SERIAL_OCTETS} were asked for`);
  bytes[0] = (bytes[0]! & 0x7f) | 0x40;
  return bytes;
}

/** What varies between a CA, a server leaf and a client leaf. */
interface Profile {
  readonly commonName: string;
  readonly isCa: boolean;
  readonly dnsNames: readonly string[];
  readonly uris: readonly string[];
  /** The one extendedKeyUsage of a leaf; a CA has none. */
  readonly purpose: 'serverAuth' | 'clientAuth' | undefined;
}

/**
 * Self-signed CA: basicConstraints cA:TRUE pathLen 0, critical; keyUsage keyCertSign|cRLSign,
 * critical; validity policy.caValidity. The commonName defaults to
 * `eso-provider-ca-<yyyymmdd>-<serial prefix>`, distinct per CA so that an old and a new CA never
 * share an issuer name.
 */
export async function issueCa(ctx: IssueContext, options: { readonly commonName?: string } = {}): Promise<Issued> {
  // A CA key is made where CA keys are held: the caSigner (HSM, KMS) when there is one.
  const key = await (ctx.crypto.caSigner ?? ctx.crypto.signer).generateKey(ctx.policy.keyAlgorithm);
  const serialNumber = randomSerialNumber(ctx.crypto.random);
  const day = new Date(truncateToSecond(ctx.now)).toISOString().slice(0, 10).replaceAll('-', '');
  const commonName = options.commonName ?? `eso-provider-ca-${day}-${toHex(serialNumber).slice(0, 8)}`;
  const profile: Profile = { commonName, isCa: true, dnsNames: [], uris: [], purpose: undefined };
  const validity = { notBefore: backdated(ctx), notAfter: truncateToSecond(ctx.now + ctx.policy.caValidity) };
  return withKey(await sign(ctx, key.subjectPublicKeyInfo, serialNumber, profile, validity, { self: key.privateKeyPem }), key);
}

/**
 * Server leaf for a namespace: EKU serverAuth only; keyUsage digitalSignature (+keyEncipherment
 * for RSA); basicConstraints cA:FALSE; subjectAltName = `dnsNames` (non-empty, DNS names), subject
 * CN the first of them that fits in a commonName (64 characters). Its notAfter is clamped to the CA's.
 */
export async function issueServerLeaf(ctx: IssueContext, issuer: KeyedCertificate, dnsNames: readonly string[]): Promise<Issued> {
  return issueLeaf(ctx, issuer, serverProfile(dnsNames));
}

/** The profile of a server leaf for `dnsNames`; throws {@link IssueError} for names that cannot be issued. */
function serverProfile(dnsNames: readonly string[]): Profile {
  if (dnsNames.length === 0) throw new IssueError('a server certificate needs at least one DNS name');
  const bad = dnsNames.find((n) => !isDnsName(n));
  if (bad !== undefined) throw new IssueError(`${JSON.stringify(bad)} is not a DNS name (RFC 1123 labels, at most 253 characters)`);
  const nameBytes = dnsNamesBytes(dnsNames);
  if (nameBytes > MAX_DNS_NAME_BYTES) {
    throw new IssueError(
      `the ${dnsNames.length} DNS names take ${nameBytes} bytes, over the limit of ${MAX_DNS_NAME_BYTES}: the certificate would be too large for a TLS handshake`,
    );
  }
  const commonName = dnsNames.find((n) => n.length <= MAX_COMMON_NAME);
  if (commonName === undefined)
    throw new IssueError(`none of the ${dnsNames.length} DNS names [${truncateList(dnsNames)}] fits in a ${MAX_COMMON_NAME}-character commonName`);
  return { commonName, isCa: false, dnsNames, uris: [], purpose: 'serverAuth' };
}

/**
 * The ESO core client leaf: EKU clientAuth only; keyUsage digitalSignature only, whatever the key;
 * basicConstraints cA:FALSE; subject CN `external-secrets-core` and the URI SAN
 * `spiffe://<clusterDomain>/ns/<esoNamespace>/sa/<serviceAccount>` from the policy.
 */
export async function issueClientLeaf(ctx: IssueContext, issuer: KeyedCertificate): Promise<Issued> {
  return issueLeaf(ctx, issuer, clientProfile(ctx.policy));
}

function clientProfile({ clusterDomain, esoNamespace, serviceAccount }: Policy): Profile {
  const uri = clientSpiffeId(clusterDomain, esoNamespace, serviceAccount);
  return { commonName: CLIENT_COMMON_NAME, isCa: false, dnsNames: [], uris: [uri], purpose: 'clientAuth' };
}

async function issueLeaf(ctx: IssueContext, issuer: KeyedCertificate, profile: Profile): Promise<Issued> {
  const ca = issuer.certificate;
  if (!ca.isCa) throw new IssueError(`issuer ${ca.subject} (serial ${ca.serialNumber}) is not a CA certificate`);
  // A leaf never outlives its CA, nor any certificate above an intermediate CA.
  const caEnd = pathNotAfter(issuer);
  const notAfter = Math.min(truncateToSecond(ctx.now + ctx.policy.leafValidity), caEnd);
  if (notAfter <= ctx.now) {
    throw new IssueError(`issuer ${ca.subject}'s path expired at ${new Date(caEnd).toISOString()}; rotate the CA before issuing leaves`);
  }
  const key = await (ctx.crypto.leafKeys ?? ctx.crypto.signer).generateKey(ctx.policy.keyAlgorithm);
  // Backdated as always, even before a fresh upstream intermediate's notBefore: verifiers check
  // each certificate's validity at the time of use, not that a leaf's lies inside its issuer's, and
  // the backdate is what dates a leaf's write (issuedNoLaterThan) for the CA's retirement.
  const validity = { notBefore: backdated(ctx), notAfter };
  const issued = withKey(await sign(ctx, key.subjectPublicKeyInfo, randomSerialNumber(ctx.crypto.random), profile, validity, issuer), key);
  const chain = servedIntermediates(issuer);
  return chain.length > 0 ? { ...issued, chain } : issued;
}

/** What a pod certificate certifies: the kubelet's key and, for a server, its DNS names. */
export interface PodLeafRequest {
  /** Server (EKU serverAuth, `dnsNames`) or ESO's client (EKU clientAuth, the SPIFFE ID of the policy). */
  readonly role: 'server' | 'client';
  /** The kubelet's public key, from the stub PKCS#10 request. */
  readonly subjectPublicKeyInfo: Uint8Array;
  /** The server's DNS names (ignored for the client). */
  readonly dnsNames: readonly string[];
  /** Its serial number (see {@link randomSerialNumber}), drawn first because the refresh time derives from it. */
  readonly serialNumber: Uint8Array;
  /** Its times, whole seconds, inside the issuer's validity (see podValidity). */
  readonly notBefore: Instant;
  readonly notAfter: Instant;
}

/**
 * A pod certificate for a key the signer never sees the private half of. The profile is the
 * Secret mode's: a server leaf as {@link issueServerLeaf}, a client leaf as
 * {@link issueClientLeaf}; the times are the caller's, checked against the issuer.
 */
export async function issuePodLeaf(ctx: IssueContext, issuer: KeyedCertificate, request: PodLeafRequest): Promise<CertificateView> {
  const ca = issuer.certificate;
  if (!ca.isCa) throw new IssueError(`issuer ${ca.subject} (serial ${ca.serialNumber}) is not a CA certificate`);
  // The returned view and the request's status carry these times exactly; X.509 keeps whole seconds.
  if (request.notBefore % 1000 !== 0 || request.notAfter % 1000 !== 0) {
    throw new IssueError(
      `validity ${new Date(request.notBefore).toISOString()} to ${new Date(request.notAfter).toISOString()} is not in whole seconds, which a certificate cannot carry`,
    );
  }
  if (request.notBefore < ca.notBefore || request.notAfter > pathNotAfter(issuer) || request.notAfter <= request.notBefore) {
    throw new IssueError(
      `validity ${new Date(request.notBefore).toISOString()} to ${new Date(request.notAfter).toISOString()} is not inside issuer ${ca.subject}'s`,
    );
  }
  const profile = request.role === 'server' ? serverProfile(request.dnsNames) : clientProfile(ctx.policy);
  return sign(ctx, request.subjectPublicKeyInfo, request.serialNumber, profile, request, issuer);
}

/** notBefore of a Secret-mode certificate: now less the policy's backdate, truncated to the second. */
function backdated(ctx: IssueContext): Instant {
  return truncateToSecond(ctx.now - ctx.policy.notBeforeBackdate);
}

function withKey(certificate: CertificateView, key: GeneratedKey): Issued {
  return { certificate, privateKeyPem: key.privateKeyPem, keyAlgorithm: key.algorithm };
}

/**
 * Builds the TBSCertificate for the public key `subjectPublicKeyInfo` and has the issuer's key
 * sign it, or, for a self-signed CA, the key's own private half.
 */
async function sign(
  ctx: IssueContext,
  subjectPublicKeyInfo: Uint8Array,
  serialNumber: Uint8Array,
  profile: Profile,
  { notBefore, notAfter }: { readonly notBefore: Instant; readonly notAfter: Instant },
  issuer: KeyedCertificate | { readonly self: string },
): Promise<CertificateView> {
  const subject = encodeCommonNameDn(profile.commonName);
  const ski = keyIdentifier(subjectPublicKeyInfo);
  const parent = 'self' in issuer ? undefined : issuer;
  // AKI must equal the CA's SKI byte for byte; a CA lacking one (not ours) gets the derived identifier.
  const aki = parent ? akiFor(parent.certificate) : ski;
  const signerSpki = parent ? parent.certificate.subjectPublicKeyInfo : subjectPublicKeyInfo;
  const algorithm = signatureAlgorithmFor(signerSpki);

  const extensions =
    profile.purpose === undefined
      ? [basicConstraintsExtension({ pathLen: 0 }), keyUsageExtension([KeyUsage.keyCertSign, KeyUsage.cRLSign])]
      : [
          basicConstraintsExtension(undefined),
          keyUsageExtension(leafKeyUsage(profile.purpose, keyFamilyOf(subjectPublicKeyInfo))),
          extendedKeyUsageExtension([profile.purpose]),
        ];
  extensions.push(subjectKeyIdentifierExtension(ski), authorityKeyIdentifierExtension(aki));
  if (profile.purpose !== undefined) extensions.push(subjectAltNameExtension(profile.dnsNames, profile.uris));

  const tbsCertificate = encodeTbsCertificate({
    serialNumber,
    signatureAlgorithm: algorithm.der,
    issuer: parent ? subjectNameOf(parent.certificate) : subject,
    notBefore,
    notAfter,
    subject,
    subjectPublicKeyInfo,
    extensions,
  });
  const signingKey = parent ? parent.privateKeyPem : (issuer as { readonly self: string }).self;
  const signatureValue = await signerOf(ctx.crypto, signingKey).sign(signingKey, tbsCertificate);
  const der = encodeCertificate(tbsCertificate, algorithm.der, signatureValue);
  const subjectString = formatCommonNameDn(profile.commonName);
  // The view is assembled from what was just encoded; a test checks it equals parseCertificate(pem).
  const certificate: CertificateView = Object.freeze({
    pem: encodePem(CERTIFICATE_LABEL, der),
    der,
    serialNumber: serialHex(serialNumber),
    subject: subjectString,
    issuer: parent ? parent.certificate.subject : subjectString,
    subjectCommonName: profile.commonName,
    notBefore,
    notAfter,
    isCa: profile.isCa,
    pathLenConstraint: profile.isCa ? 0 : undefined,
    dnsNames: [...profile.dnsNames],
    uris: [...profile.uris],
    extendedKeyUsage: profile.purpose ? [profile.purpose] : [],
    subjectKeyIdentifier: toHex(ski),
    authorityKeyIdentifier: toHex(aki),
    subjectPublicKeyInfo,
    tbsCertificate,
    signatureAlgorithm: algorithm.oid,
    signatureValue,
  });
  return certificate;
}

/** The signer that holds `storedKey`: the caSigner for its references, the software signer for PEM keys. */
function signerOf(crypto: CryptoBackend, storedKey: string): Signer {
  return crypto.caSigner?.holds(storedKey) ? crypto.caSigner : crypto.signer;
}

/**
 * A leaf's keyUsage. Only an RSA server key may also encipher (RSA key transport in TLS 1.2). A
 * client only signs: RFC 5280 4.2.1.12 lists digitalSignature and keyAgreement as the usages
 * consistent with clientAuth, and zlint errors on keyEncipherment. An ECDSA key cannot encrypt at
 * all (RFC 8813 section 3).
 */
function leafKeyUsage(purpose: 'serverAuth' | 'clientAuth', family: KeyFamily): number[] {
  return purpose === 'serverAuth' && family === 'rsa' ? [KeyUsage.digitalSignature, KeyUsage.keyEncipherment] : [KeyUsage.digitalSignature];
}

function akiFor(ca: CertificateView): Uint8Array {
  return ca.subjectKeyIdentifier === undefined ? keyIdentifier(ca.subjectPublicKeyInfo) : fromHex(ca.subjectKeyIdentifier);
}
