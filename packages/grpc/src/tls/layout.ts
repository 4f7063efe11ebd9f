import { decodePemBlocks, encodePem, type PemBlock } from '@eso-mtls/core';
import { TlsMaterialError, type TlsMaterialPems } from './material.js';

/**
 * How a mounted certificate folder holds its material.
 *
 * - `secret`: a `kubernetes.io/tls` Secret volume: `tls.crt` (leaf first, then any intermediates),
 *   `tls.key` and `ca.crt`.
 * - `pod-certificate`: a projected volume with a `podCertificate` source writing
 *   `credentialBundlePath: credentials.pem` (one PKCS#8 `PRIVATE KEY` block, then the
 *   `CERTIFICATE` blocks, leaf first, the key generated on the node) and a `clusterTrustBundle`
 *   source writing `path: ca.crt` (every CA of the matching ClusterTrustBundles).
 *
 * Both are written the same way by the kubelet (a timestamped folder and a `..data` symlink swap),
 * and both are read, checked and hot-reloaded the same way.
 */
export type CertificateLayout = 'secret' | 'pod-certificate';

/** File names inside a certificate folder; each applies to one layout, and `caBundle` to both. */
export interface CertificateFileNames {
  /** `secret` layout: the leaf and its intermediates; default `tls.crt`. */
  readonly certificate?: string;
  /** `secret` layout: the leaf's private key; default `tls.key`. */
  readonly privateKey?: string;
  /** `pod-certificate` layout: the key and the chain in one file; default `credentials.pem`. */
  readonly credentialBundle?: string;
  /** Both layouts: the CA certificates to trust; default `ca.crt`. */
  readonly caBundle?: string;
}

/** One layout's files and how their texts become material to check. */
export interface FolderLayout {
  /** The files read from one version of the folder, in the order `pems` takes their texts. */
  readonly files: readonly string[];
  /** How messages name the three parts of the material. */
  readonly partNames: { readonly certificate: string; readonly privateKey: string; readonly caBundle: string };
  /** What to mount, for a message about a file that cannot be read. */
  readonly mountHint: string;
  /** The three PEM texts in `texts` (one per file of `files`); throws {@link TlsMaterialError} for a malformed credential bundle. */
  pems(texts: readonly string[]): TlsMaterialPems;
}

/** Every {@link CertificateLayout}, e.g. to validate a flag naming one. */
export const CERTIFICATE_LAYOUTS: readonly CertificateLayout[] = ['secret', 'pod-certificate'];

const FILE_NAMES_OF: Record<CertificateLayout, readonly (keyof CertificateFileNames)[]> = {
  secret: ['certificate', 'privateKey', 'caBundle'],
  'pod-certificate': ['credentialBundle', 'caBundle'],
};

const KEY_LABEL = 'PRIVATE KEY';
const CERTIFICATE_LABEL = 'CERTIFICATE';

const blank = (s: string) => s.trim() === '';

/**
 * The private key and the certificates of a pod-certificate credential bundle: exactly one PKCS#8
 * `PRIVATE KEY` block, first, then one or more `CERTIFICATE` blocks, leaf first, as the kubelet
 * writes it. The PEM is decoded strictly, so a bundle cut short anywhere is refused rather than
 * half read. Throws {@link TlsMaterialError} naming `file` and the block at fault; whether the key
 * belongs to the leaf is judged later, with the rest of the material.
 */
function credentialBundlePems(text: string, file: string): Pick<TlsMaterialPems, 'certificate' | 'privateKey'> {
  let blocks: PemBlock[];
  try {
    blocks = decodePemBlocks(text);
  } catch (e) {
    throw new TlsMaterialError(
      'garbage_pem',
      `${file} is not a PEM credential bundle: ${(e as Error).message}; it must hold a PRIVATE KEY block, then CERTIFICATE blocks`,
    );
  }
  const [first, ...rest] = blocks;
  if (first!.label !== KEY_LABEL) {
    const keyAt = blocks.findIndex((b) => b.label === KEY_LABEL);
    if (keyAt < 0) {
      throw new TlsMaterialError(
        'missing_key',
        `${file} holds no PKCS#8 PRIVATE KEY block (found ${blocks.map((b) => b.label).join(', ')}); the kubelet writes the key first, then the certificates`,
      );
    }
    throw new TlsMaterialError('garbage_pem', `${file} must begin with its PRIVATE KEY block; block 1 is a ${first!.label}, the key is block ${keyAt + 1}`);
  }
  const stray = rest.findIndex((b) => b.label !== CERTIFICATE_LABEL);
  if (stray >= 0) {
    throw new TlsMaterialError(
      'garbage_pem',
      `${file}: PEM block ${stray + 2} is a ${rest[stray]!.label}; only CERTIFICATE blocks may follow the PRIVATE KEY block`,
    );
  }
  if (rest.length === 0) throw new TlsMaterialError('missing_certificate', `${file} holds a PRIVATE KEY block but no CERTIFICATE block`);
  return { privateKey: encodePem(KEY_LABEL, first!.der), certificate: rest.map((b) => encodePem(CERTIFICATE_LABEL, b.der)).join('') };
}

function secretLayout(names: Required<CertificateFileNames>): FolderLayout {
  const files = [names.certificate, names.privateKey, names.caBundle];
  return {
    files,
    partNames: { certificate: names.certificate, privateKey: names.privateKey, caBundle: names.caBundle },
    mountHint: `mount a Secret holding ${files.join(', ')} there`,
    pems: ([certificate = '', privateKey = '', caBundle = '']) => ({ certificate, privateKey, caBundle }),
  };
}

function podCertificateLayout(names: Required<CertificateFileNames>): FolderLayout {
  const bundle = names.credentialBundle;
  return {
    files: [bundle, names.caBundle],
    partNames: { certificate: bundle, privateKey: `the PRIVATE KEY block of ${bundle}`, caBundle: names.caBundle },
    mountHint: `project a podCertificate credential bundle at ${bundle} and a clusterTrustBundle at ${names.caBundle} there`,
    pems: ([bundleText = '', caBundle = '']) => {
      if (!blank(bundleText)) return { ...credentialBundlePems(bundleText, bundle), caBundle };
      if (blank(caBundle)) {
        throw new TlsMaterialError('empty', `${bundle} and ${names.caBundle} are both empty; the kubelet has not written the pod certificate yet`);
      }
      throw new TlsMaterialError('missing_certificate', `${bundle} is empty; the kubelet has not written the pod certificate yet`);
    },
  };
}

/**
 * The {@link FolderLayout} of `layout` with `fileNames` applied. Throws RangeError for an unknown
 * layout, or a file name of the other layout (it would be ignored, and the folder misread).
 */
export function folderLayout(layout: CertificateLayout = 'secret', fileNames: CertificateFileNames = {}): FolderLayout {
  if (!CERTIFICATE_LAYOUTS.includes(layout)) throw new RangeError(`layout ${JSON.stringify(layout)} is not one of ${CERTIFICATE_LAYOUTS.join(', ')}`);
  const foreign = Object.keys(fileNames).filter(
    (k) => fileNames[k as keyof CertificateFileNames] !== undefined && !FILE_NAMES_OF[layout].includes(k as keyof CertificateFileNames),
  );
  if (foreign.length > 0) {
    throw new RangeError(`fileNames ${foreign.join(', ')}: not a file of the ${layout} layout, whose files are ${FILE_NAMES_OF[layout].join(', ')}`);
  }
  const names: Required<CertificateFileNames> = {
    certificate: fileNames.certificate ?? 'tls.crt',
    privateKey: fileNames.privateKey ?? 'tls.key',
    credentialBundle: fileNames.credentialBundle ?? 'credentials.pem',
    caBundle: fileNames.caBundle ?? 'ca.crt',
  };
  return layout === 'secret' ? secretLayout(names) : podCertificateLayout(names);
}
