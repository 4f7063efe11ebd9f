/**
 * Issuance throughput: P-256 server leaves issued end to end (fresh key, TBSCertificate, signature,
 * PEM certificate + PKCS#8 PEM key), through the core with the node:crypto backend and with the
 * WebCrypto signer, against the naive @peculiar/x509 generator and `openssl speed` as the ceiling.
 *
 *   node --import ./scripts/register-ts.mjs bench/issue.bench.ts
 */
import 'reflect-metadata';
import { execFileSync } from 'node:child_process';
import { webcrypto } from 'node:crypto';
import { pathToFileURL } from 'node:url';
import * as x509 from '@peculiar/x509';
import { type CryptoBackend, type Issued, issueCa, issueServerLeaf, createWebCryptoSigner, resolvePolicy } from '@eso-mtls/core';
import { createNodeCryptoBackend } from '@eso-mtls/core/node';

/** One measured row: operations per wall-clock second and per CPU second of this process. */
export interface Throughput {
  readonly name: string;
  readonly count: number;
  readonly perSecond: number;
  /** Operations per second of process CPU time (all threads, including libuv's pool). */
  readonly perCpuSecond: number;
}

/** Everything {@link runIssueBenchmark} measures. */
export interface IssueBenchmark {
  readonly core: Throughput;
  readonly coreWebCrypto: Throughput;
  readonly naivePeculiar: Throughput;
  /** `openssl speed ecdsap256` signatures per second, or undefined when openssl is missing. */
  readonly opensslSignPerSecond: number | undefined;
}

const DNS_NAMES = ['provider', 'provider.team-a', 'provider.team-a.svc', 'provider.team-a.svc.cluster.local'];

/** Runs `op` one at a time for about `ms` milliseconds (after a short warm-up) and reports its rate. */
async function measure(name: string, ms: number, op: () => Promise<unknown>): Promise<Throughput> {
  for (let i = 0; i < 50; i++) await op();
  const cpu0 = process.cpuUsage();
  const t0 = performance.now();
  let count = 0;
  while (performance.now() - t0 < ms) {
    await op();
    count++;
  }
  const seconds = (performance.now() - t0) / 1000;
  const cpu = process.cpuUsage(cpu0);
  const cpuSeconds = (cpu.user + cpu.system) / 1e6;
  return { name, count, perSecond: count / seconds, perCpuSecond: count / cpuSeconds };
}

async function coreThroughput(name: string, crypto: CryptoBackend, ms: number): Promise<Throughput> {
  const policy = resolvePolicy();
  const now = Date.now();
  const ca = await issueCa({ crypto, policy, now });
  let last: Issued | undefined;
  const result = await measure(name, ms, async () => {
    last = await issueServerLeaf({ crypto, policy, now }, ca, DNS_NAMES);
  });
  if (!last?.certificate.pem.startsWith('-----BEGIN CERTIFICATE-----') || !last.privateKeyPem.includes('BEGIN PRIVATE KEY')) {
    throw new Error(`${name}: the last leaf is not PEM`);
  }
  return result;
}

/** The obvious way: @peculiar/x509's generator over WebCrypto, exporting PEM and PKCS#8. */
async function naiveThroughput(ms: number): Promise<Throughput> {
  x509.cryptoProvider.set(webcrypto);
  const alg = { name: 'ECDSA', namedCurve: 'P-256', hash: 'SHA-256' };
  const caKeys = await webcrypto.subtle.generateKey(alg, true, ['sign', 'verify']);
  const ca = await x509.X509CertificateGenerator.createSelfSigned({
    serialNumber: '01',
    name: 'CN=bench-ca',
    notBefore: new Date(),
    notAfter: new Date(Date.now() + 86_400_000),
    keys: caKeys,
    signingAlgorithm: alg,
    extensions: [new x509.BasicConstraintsExtension(true, 0, true)],
  });
  return measure('@peculiar/x509 X509CertificateGenerator (naive)', ms, async () => {
    const keys = await webcrypto.subtle.generateKey(alg, true, ['sign', 'verify']);
    const cert = await x509.X509CertificateGenerator.create({
      serialNumber: Buffer.from(webcrypto.getRandomValues(new Uint8Array(16)))
        .toString('hex')
        .replace(/^[89a-f]/, '1'),
      subject: 'CN=provider',
      issuer: ca.subject,
      notBefore: new Date(),
      notAfter: new Date(Date.now() + 86_400_000),
      signingKey: caKeys.privateKey,
      publicKey: keys.publicKey,
      signingAlgorithm: alg,
      extensions: [
        new x509.BasicConstraintsExtension(false, undefined, true),
        new x509.KeyUsagesExtension(x509.KeyUsageFlags.digitalSignature, true),
        new x509.ExtendedKeyUsageExtension([x509.ExtendedKeyUsage.serverAuth]),
        await x509.SubjectKeyIdentifierExtension.create(keys.publicKey),
        await x509.AuthorityKeyIdentifierExtension.create(ca),
        new x509.SubjectAlternativeNameExtension(DNS_NAMES.map((value) => ({ type: 'dns' as const, value }))),
      ],
    });
    const pkcs8 = await webcrypto.subtle.exportKey('pkcs8', keys.privateKey);
    return [cert.toString('pem'), x509.PemConverter.encode(pkcs8, 'PRIVATE KEY')];
  });
}

/** `openssl speed -seconds 2 ecdsap256`, sign/s from its summary line. */
export function opensslEcdsaP256SignPerSecond(seconds = 2): number | undefined {
  try {
    const out = execFileSync('openssl', ['speed', '-seconds', String(seconds), 'ecdsap256'], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] });
    // e.g. " 256 bits ecdsa (nistp256)   0.0000s   0.0001s  44927.6  14380.2"
    const m = /\(nistp256\)\s+\S+\s+\S+\s+([\d.]+)\s+([\d.]+)/.exec(out);
    return m ? Number(m[1]) : undefined;
  } catch {
    return undefined;
  }
}

/** Measures every row, each for about `ms` milliseconds. */
export async function runIssueBenchmark(ms = 3000): Promise<IssueBenchmark> {
  const core = await coreThroughput('core + node:crypto backend', createNodeCryptoBackend(), ms);
  const node = createNodeCryptoBackend();
  const coreWebCrypto = await coreThroughput('core + createWebCryptoSigner(node webcrypto)', { ...node, signer: createWebCryptoSigner(webcrypto) }, ms);
  const naivePeculiar = await naiveThroughput(ms);
  return { core, coreWebCrypto, naivePeculiar, opensslSignPerSecond: opensslEcdsaP256SignPerSecond() };
}

/** The figures as a small markdown table. */
export function formatIssueBenchmark(b: IssueBenchmark): string {
  const row = (t: Throughput): string =>
    `| ${t.name} | ${t.perSecond.toFixed(0)} | ${t.perCpuSecond.toFixed(0)} | ${(t.perSecond / b.naivePeculiar.perSecond).toFixed(1)}x |`;
  return [
    '| P-256 leaves, end to end | leaves/s (wall) | leaves per CPU-second | vs naive |',
    '|---|---:|---:|---:|',
    row(b.core),
    row(b.coreWebCrypto),
    row(b.naivePeculiar),
    `| openssl speed ecdsap256 (sign only, ceiling) | ${b.opensslSignPerSecond?.toFixed(0) ?? 'n/a'} | | |`,
    '',
    'Target: >= 1,000 P-256 leaves/s on one core.',
  ].join('\n');
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) {
  console.log(formatIssueBenchmark(await runIssueBenchmark()));
}
