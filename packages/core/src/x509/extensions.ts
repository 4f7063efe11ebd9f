/**
 * X.509 extensions (RFC 5280 section 4.2) as path validation needs them: the Extensions list of a
 * certificate or a certification request, and the values a {@link CertificateView} leaves out
 * (keyUsage, nameConstraints, which extensions are critical). Read on demand, since only a chain
 * being verified needs them, never the planner's hot path.
 */
import type { CertificateView } from './certificate.js';
import { type DerElement, Tag, children, contentsOf, oidToString, readElement } from './der.js';
import { decodeString } from './distinguished-name.js';

/** Dotted OIDs of the extensions the core reads. */
export const ExtensionId = {
  subjectKeyIdentifier: '2.5.29.14',
  keyUsage: '2.5.29.15',
  subjectAltName: '2.5.29.17',
  basicConstraints: '2.5.29.19',
  nameConstraints: '2.5.29.30',
  authorityKeyIdentifier: '2.5.29.35',
  extKeyUsage: '2.5.29.37',
} as const;

/** One Extension: its extnID, criticality and the DER inside its extnValue OCTET STRING. */
export interface Extension {
  /** Dotted OID. */
  readonly extnID: string;
  /** True when marked critical; DEFAULT FALSE. */
  readonly critical: boolean;
  /** The contents of the extnValue OCTET STRING: the extension's own DER. */
  readonly extnValue: Uint8Array;
}

/** `e`, checked to be present and of `tag`; throws naming `what` otherwise. */
export function want(e: DerElement | undefined, tag: number, what: string): DerElement {
  if (e?.tag !== tag) throw new Error(`${what} is missing or not of the expected type`);
  return e;
}

/** The only element inside the OCTET STRING-wrapped extension value, checked to fill it exactly. */
export function single(value: Uint8Array, what: string): DerElement {
  const e = readElement(value, 0);
  if (e.end !== value.length) throw new Error(`${what} has trailing data`);
  return e;
}

/** The Extension elements of the Extensions SEQUENCE `extensions` of `der`; throws on a malformed or repeated one. */
export function readExtensions(der: Uint8Array, extensions: DerElement | undefined): Extension[] {
  const seen = new Set<string>();
  return children(der, want(extensions, Tag.SEQUENCE, 'extensions')).map((extension) => {
    const [id, second, third] = children(der, want(extension, Tag.SEQUENCE, 'an Extension'));
    const extnID = oidToString(contentsOf(der, want(id, Tag.OID, 'extnID')));
    // RFC 5280 4.2: a certificate must not include more than one instance of an extension.
    if (seen.has(extnID)) throw new Error(`extension ${extnID} appears twice`);
    seen.add(extnID);
    const flag = second?.tag === Tag.BOOLEAN ? second : undefined;
    const value = want(flag ? third : second, Tag.OCTET_STRING, `the value of extension ${extnID}`);
    // A malformed flag (not one octet) counts as critical: the cautious reading for path validation.
    const critical = flag !== undefined && (flag.end - flag.contentStart !== 1 || der[flag.contentStart] !== 0);
    return { extnID, critical, extnValue: contentsOf(der, value) };
  });
}

/** The extensions of a certificate, read again from its TBSCertificate; none for a version 1 certificate. */
export function extensionsOf(certificate: CertificateView): Extension[] {
  const tbs = certificate.tbsCertificate;
  const wrapper = children(tbs, readElement(tbs, 0)).find((f) => f.tag === 0xa3);
  return wrapper ? readExtensions(tbs, children(tbs, wrapper)[0]) : [];
}

/** basicConstraints (RFC 5280 4.2.1.9): cA, and the pathLenConstraint if present. */
export function readBasicConstraints(value: Uint8Array): { readonly isCa: boolean; readonly pathLenConstraint: number | undefined } {
  const [first, second] = children(value, want(single(value, 'basicConstraints'), Tag.SEQUENCE, 'basicConstraints'));
  const cA = first?.tag === Tag.BOOLEAN ? first : undefined;
  if (cA && cA.end - cA.contentStart !== 1) throw new Error('basicConstraints cA is not a BOOLEAN');
  const pathLen = cA ? second : first;
  let pathLenConstraint: number | undefined;
  if (pathLen) {
    const body = contentsOf(value, want(pathLen, Tag.INTEGER, 'pathLenConstraint'));
    if (body.length > 4 || body[0]! & 0x80) throw new Error('pathLenConstraint is out of range');
    pathLenConstraint = body.reduce((n, b) => n * 256 + b, 0);
  }
  return { isCa: cA !== undefined && value[cA.contentStart] !== 0, pathLenConstraint };
}

/** The named bits of keyUsage, in bit order (RFC 5280 4.2.1.3). */
export const KEY_USAGE_NAMES = [
  'digitalSignature',
  'nonRepudiation',
  'keyEncipherment',
  'dataEncipherment',
  'keyAgreement',
  'keyCertSign',
  'cRLSign',
  'encipherOnly',
  'decipherOnly',
] as const;
/** One of {@link KEY_USAGE_NAMES}. */
export type KeyUsageName = (typeof KEY_USAGE_NAMES)[number];

/** The usages a keyUsage BIT STRING asserts. */
export function readKeyUsage(value: Uint8Array): KeyUsageName[] {
  const bits = contentsOf(value, want(single(value, 'keyUsage'), Tag.BIT_STRING, 'keyUsage'));
  if (bits.length === 0 || bits[0]! > 7) throw new Error('keyUsage is not a well-formed BIT STRING');
  const octets = bits.subarray(1);
  return KEY_USAGE_NAMES.filter((_, bit) => ((octets[bit >> 3] ?? 0) & (0x80 >> (bit & 7))) !== 0);
}

// GeneralName CHOICE tags (RFC 5280 4.2.1.6), all IMPLICIT but directoryName's.
const GENERAL_NAME_FORMS: Readonly<Record<number, string>> = {
  0xa0: 'otherName',
  0x81: 'rfc822Name',
  0x82: 'dNSName',
  0xa3: 'x400Address',
  0xa4: 'directoryName',
  0xa5: 'ediPartyName',
  0x86: 'uniformResourceIdentifier',
  0x87: 'iPAddress',
  0x88: 'registeredID',
};

/** The nameConstraints of a CA, as far as the core understands them: dNSName subtrees. */
export interface NameConstraints {
  /** dNSName bases of permittedSubtrees. */
  readonly permittedDnsNames: readonly string[];
  /** dNSName bases of excludedSubtrees. */
  readonly excludedDnsNames: readonly string[];
  /** Subtrees the core does not evaluate: other name forms, or a minimum or maximum (RFC 5280 forbids both), as `permitted iPAddress`. */
  readonly unsupported: readonly string[];
}

/** nameConstraints (RFC 5280 4.2.1.10): permittedSubtrees [0] and excludedSubtrees [1] of GeneralSubtree. */
export function readNameConstraints(value: Uint8Array): NameConstraints {
  const out = { permittedDnsNames: [] as string[], excludedDnsNames: [] as string[], unsupported: [] as string[] };
  for (const subtrees of children(value, want(single(value, 'nameConstraints'), Tag.SEQUENCE, 'nameConstraints'))) {
    if (subtrees.tag !== 0xa0 && subtrees.tag !== 0xa1) throw new Error('nameConstraints holds something other than permitted or excluded subtrees');
    const kind = subtrees.tag === 0xa0 ? 'permitted' : 'excluded';
    for (const subtree of children(value, subtrees)) {
      const [base, ...distances] = children(value, want(subtree, Tag.SEQUENCE, 'a GeneralSubtree'));
      const form = base ? GENERAL_NAME_FORMS[base.tag] : undefined;
      if (form === undefined) throw new Error('a GeneralSubtree has no GeneralName base');
      if (form !== 'dNSName' || distances.some((d) => d.tag !== 0x80 || contentsOf(value, d).some((b) => b !== 0))) {
        out.unsupported.push(`${kind} ${form}${form === 'dNSName' ? ' with a minimum or maximum' : ''}`);
        continue;
      }
      (kind === 'permitted' ? out.permittedDnsNames : out.excludedDnsNames).push(decodeString(Tag.IA5_STRING, contentsOf(value, base!))!);
    }
  }
  return out;
}

/** What path validation reads of a certificate beyond its {@link CertificateView}. */
export interface PathExtensions {
  /** keyUsage, when the extension is present. */
  readonly keyUsage: readonly KeyUsageName[] | undefined;
  /** nameConstraints, when present, with its criticality. */
  readonly nameConstraints: (NameConstraints & { readonly critical: boolean }) | undefined;
  /** extnIDs of the critical extensions. */
  readonly critical: readonly string[];
}

/** Reads the {@link PathExtensions} of a certificate. Throws on a malformed extension. */
export function pathExtensionsOf(certificate: CertificateView): PathExtensions {
  const extensions = extensionsOf(certificate);
  const keyUsage = extensions.find((e) => e.extnID === ExtensionId.keyUsage);
  const nameConstraints = extensions.find((e) => e.extnID === ExtensionId.nameConstraints);
  return {
    keyUsage: keyUsage ? readKeyUsage(keyUsage.extnValue) : undefined,
    nameConstraints: nameConstraints ? { ...readNameConstraints(nameConstraints.extnValue), critical: nameConstraints.critical } : undefined,
    critical: extensions.filter((e) => e.critical).map((e) => e.extnID),
  };
}
