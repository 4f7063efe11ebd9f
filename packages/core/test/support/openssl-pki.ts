// Test PKIs made by the openssl CLI (`req -x509` for roots, `ca` for the rest, which sets any
// validity to the second): certificates from a maker we did not write, for the chain verifier.
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { type CertificateView, parseCertificate } from '@eso-mtls/core';
import { openssl } from './fixtures.js';

/** A certificate openssl made: its file, its key's file and its parsed view. */
export interface MadeCertificate {
  readonly name: string;
  readonly file: string;
  readonly keyFile: string;
  readonly view: CertificateView;
}

/** The extension sections certificates are made with (`-extensions <name>`). */
const EXTENSION_SECTIONS = `
[ root ]
basicConstraints = critical, CA:TRUE
keyUsage = critical, keyCertSign, cRLSign
subjectKeyIdentifier = hash

[ root_pathlen1 ]
basicConstraints = critical, CA:TRUE, pathlen:1
keyUsage = critical, keyCertSign, cRLSign
subjectKeyIdentifier = hash

[ intermediate ]
basicConstraints = critical, CA:TRUE
keyUsage = critical, keyCertSign, cRLSign
subjectKeyIdentifier = hash
authorityKeyIdentifier = keyid:always

[ intermediate_pathlen0 ]
basicConstraints = critical, CA:TRUE, pathlen:0
keyUsage = critical, keyCertSign, cRLSign
subjectKeyIdentifier = hash
authorityKeyIdentifier = keyid:always

[ not_ca ]
basicConstraints = critical, CA:FALSE
keyUsage = critical, digitalSignature
subjectKeyIdentifier = hash
authorityKeyIdentifier = keyid:always

[ no_cert_sign ]
basicConstraints = critical, CA:TRUE
keyUsage = critical, digitalSignature, cRLSign
subjectKeyIdentifier = hash
authorityKeyIdentifier = keyid:always

[ permits_other_domains ]
basicConstraints = critical, CA:TRUE
keyUsage = critical, keyCertSign, cRLSign
nameConstraints = critical, permitted;DNS:other.example, permitted;DNS:.corp.example
subjectKeyIdentifier = hash
authorityKeyIdentifier = keyid:always

[ permits_svc ]
basicConstraints = critical, CA:TRUE
keyUsage = critical, keyCertSign, cRLSign
nameConstraints = critical, permitted;DNS:svc, permitted;DNS:svc.cluster.local
subjectKeyIdentifier = hash
authorityKeyIdentifier = keyid:always

[ excludes_team_a ]
basicConstraints = critical, CA:TRUE
keyUsage = critical, keyCertSign, cRLSign
nameConstraints = critical, excluded;DNS:team-a.svc
subjectKeyIdentifier = hash
authorityKeyIdentifier = keyid:always

[ permits_directory_name ]
basicConstraints = critical, CA:TRUE
keyUsage = critical, keyCertSign, cRLSign
nameConstraints = critical, permitted;dirName:other_organisation
subjectKeyIdentifier = hash
authorityKeyIdentifier = keyid:always

[ other_organisation ]
O = Other

[ unknown_critical ]
basicConstraints = critical, CA:TRUE
keyUsage = critical, keyCertSign, cRLSign
subjectKeyIdentifier = hash
authorityKeyIdentifier = keyid:always
1.3.6.1.4.1.55555.1 = critical, ASN1:NULL

[ leaf ]
basicConstraints = critical, CA:FALSE
keyUsage = critical, digitalSignature
extendedKeyUsage = serverAuth
subjectAltName = DNS:provider.team-a.svc, DNS:provider.team-a.svc.cluster.local
subjectKeyIdentifier = hash
authorityKeyIdentifier = keyid:always
`;

/** Extension section names of {@link EXTENSION_SECTIONS}. */
export type ExtensionSection =
  | 'root'
  | 'root_pathlen1'
  | 'intermediate'
  | 'intermediate_pathlen0'
  | 'not_ca'
  | 'no_cert_sign'
  | 'permits_other_domains'
  | 'permits_svc'
  | 'excludes_team_a'
  | 'permits_directory_name'
  | 'unknown_critical'
  | 'leaf';

/** `YYYYMMDDHHMMSSZ`, as `openssl ca -startdate/-enddate` takes it. */
const generalizedTime = (t: number): string => `${new Date(t).toISOString().slice(0, 19).replace(/[-T:]/g, '')}Z`;

/** Makes P-256 certificates in `dir` with the openssl CLI. */
export class OpensslPki {
  private readonly config: string;

  constructor(private readonly dir: string) {
    mkdirSync(join(dir, 'issued'), { recursive: true });
    writeFileSync(join(dir, 'index.txt'), '');
    writeFileSync(join(dir, 'serial'), '1000\n');
    this.config = join(dir, 'openssl.cnf');
    writeFileSync(
      this.config,
      [
        '[ req ]',
        'distinguished_name = req_dn',
        'prompt = no',
        '[ req_dn ]',
        'CN = unused',
        '[ ca ]',
        'default_ca = ca_default',
        '[ ca_default ]',
        `database = ${join(dir, 'index.txt')}`,
        `new_certs_dir = ${join(dir, 'issued')}`,
        `serial = ${join(dir, 'serial')}`,
        'default_md = sha256',
        'policy = policy_any',
        'unique_subject = no',
        'preserve = yes',
        'copy_extensions = none',
        'email_in_dn = no',
        '[ policy_any ]',
        'organizationName = optional',
        'commonName = optional',
        EXTENSION_SECTIONS,
      ].join('\n'),
    );
  }

  private run(args: readonly string[]): void {
    const r = openssl(args);
    if (r.status !== 0) throw new Error(`openssl ${args.join(' ')} failed: ${r.output}`);
  }

  private key(name: string): string {
    const keyFile = join(this.dir, `${name}.key`);
    this.run(['genpkey', '-algorithm', 'EC', '-pkeyopt', 'ec_paramgen_curve:P-256', '-out', keyFile]);
    return keyFile;
  }

  private made(name: string, keyFile: string): MadeCertificate {
    const file = join(this.dir, `${name}.pem`);
    return { name, file, keyFile, view: parseCertificate(readFileSync(file, 'utf8')) };
  }

  /** A self-signed root valid from now for ten years. */
  root(name: string, subject: string, section: ExtensionSection = 'root'): MadeCertificate {
    const keyFile = this.key(name);
    this.run([
      'req',
      '-x509',
      '-config',
      this.config,
      '-key',
      keyFile,
      '-subj',
      subject,
      '-extensions',
      section,
      '-days',
      '3650',
      '-out',
      join(this.dir, `${name}.pem`),
    ]);
    return this.made(name, keyFile);
  }

  /** A certificate for a fresh key, signed by `issuer`, valid from `notBefore` to `notAfter`. */
  issue(name: string, subject: string, issuer: MadeCertificate, section: ExtensionSection, notBefore: number, notAfter: number): MadeCertificate {
    const keyFile = this.key(name);
    const csr = join(this.dir, `${name}.csr`);
    this.run(['req', '-new', '-config', this.config, '-key', keyFile, '-subj', subject, '-out', csr]);
    this.sign(csr, join(this.dir, `${name}.pem`), issuer, section, notBefore, notAfter);
    return this.made(name, keyFile);
  }

  /** `openssl ca`: the request in `csr` signed by `issuer` into `out`, with `section`'s extensions, from `notBefore` to `notAfter`. */
  private sign(csr: string, out: string, issuer: MadeCertificate, section: ExtensionSection, notBefore: number, notAfter: number): void {
    this.run([
      'ca',
      '-batch',
      '-notext',
      '-config',
      this.config,
      '-cert',
      issuer.file,
      '-keyfile',
      issuer.keyFile,
      '-in',
      csr,
      '-out',
      out,
      '-extensions',
      section,
      '-startdate',
      generalizedTime(notBefore),
      '-enddate',
      generalizedTime(notAfter),
    ]);
  }

  /**
   * Signs a request made elsewhere (our PKCS#10, as an upstream issuer would), with `section`'s
   * extensions, valid from `notBefore` to `notAfter`; the key stays with whoever made the request.
   */
  answer(name: string, csrPem: string, issuer: MadeCertificate, section: ExtensionSection, notBefore: number, notAfter: number): CertificateView {
    const csr = join(this.dir, `${name}.csr`);
    writeFileSync(csr, csrPem);
    const out = join(this.dir, `${name}.pem`);
    this.sign(csr, out, issuer, section, notBefore, notAfter);
    return parseCertificate(readFileSync(out, 'utf8'));
  }

  /** `certificates` concatenated into one PEM file named `name`. */
  bundle(name: string, certificates: readonly MadeCertificate[]): string {
    const file = join(this.dir, name);
    writeFileSync(file, certificates.map((c) => c.view.pem).join(''));
    return file;
  }
}
