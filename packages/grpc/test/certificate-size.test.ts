// The server certificate size bound (name-budget.ts) at its edge, with real handshakes: the
// largest leaf the core issues, for every key algorithm, served by the provider and accepted by
// Node, openssl s_client and grpc-go; and a leaf just over OpenSSL's 100 KiB certificate-message
// cap, which the core refuses to issue, failing in Node and openssl. Figures: docs/x509.md.
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { X509Certificate } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import {
  IssueError,
  KEY_ALGORITHMS,
  MAX_DNS_NAME_BYTES,
  MAX_SERVER_CERTIFICATE_BYTES,
  dnsNamesBytes,
  fitServiceNames,
  isDnsName,
  issueCa,
  issueClientLeaf,
  issueServerLeaf,
  namespaceDnsNames,
  resolvePolicy,
  type IssueContext,
  type KeyAlgorithm,
  type ServiceRef,
} from '@eso-mtls/core';
import { createNodeCryptoBackend } from '@eso-mtls/core/node';
import { createSecretStoreProviderClient, type SecretStoreProviderClient } from '@eso-mtls/grpc';
import { failureOf } from '@eso-mtls/test-kit/failure';
import { buildGoInterop, runProgram } from './support/go-interop.js';
import { memoryProvider } from './support/memory-provider.js';
import { opensslServerLeaf, sClient } from './support/openssl-tls.js';
import type { KeyPair, TestCa } from '@eso-mtls/test-kit/pki';
import { clientChannel, startTestProvider, type RunningProvider, type TestPkiSet } from '@eso-mtls/test-kit/provider-fixture';
import { type ProbeOutcome, probe } from '@eso-mtls/test-kit/tls-probe';

// A cold Go build downloads grpc-go from the Go proxy: minutes, once per machine.
const BUILD_TIMEOUT = 10 * 60_000;
// RSA-3072 key generation on a loaded 2-core machine, three keys per test.
const TEST_TIMEOUT = 120_000;
/** OpenSSL's default max_cert_list, which Node keeps: the largest Certificate message a peer accepts. */
const OPENSSL_CERTIFICATE_MESSAGE_CAP = 100 * 1024;
/** The pod-certificate API's cap on a PEM chain. */
const POD_CERTIFICATE_PEM_CAP = 100 * 1024;
/** The control leaf's dNSName bytes: its DER lands about 1 KB over OpenSSL's cap. */
const CONTROL_DNS_NAME_BYTES = 103_000;

const crypto = createNodeCryptoBackend();
const contextFor = (keyAlgorithm: KeyAlgorithm): IssueContext => ({ crypto, policy: resolvePolicy({ keyAlgorithm }), now: Date.now() });
const CLUSTER_DOMAIN = resolvePolicy().clusterDomain;
/** A 63-character DNS label: the longest a namespace or Service name may be. */
const longestLabel = (prefix: string) => `${prefix}-`.padEnd(63, 'x');
const NAMESPACE = longestLabel('tenant');

/**
 * Distinct DNS names taking exactly `bytes` dNSName bytes (at least 3): names of 127 characters
 * (2 + 127 bytes each, the longest with a one-octet length) and a last one for the remainder.
 */
function paddingNames(bytes: number, tag: string): string[] {
  if (bytes < 3) throw new Error(`${bytes} bytes cannot hold a dNSName (3 at least)`);
  const names: string[] = [];
  for (let left = bytes; left > 0;) {
    // Never leave 1 or 2 bytes behind: no dNSName is that small.
    const take = left <= 129 ? left : left - 129 >= 3 ? 129 : 100;
    const length = take - 2;
    const flat = `${tag}${names.length}x`.padEnd(length, 'x').slice(0, length);
    // A dot after 63 characters keeps every label within 63 (at 62 when the name is 64 long).
    const dot = length === 64 ? 62 : 63;
    names.push(length > 63 ? `${flat.slice(0, dot)}.${flat.slice(dot + 1)}` : flat);
    left -= take;
  }
  return names;
}

/**
 * The DNS names of the largest server leaf the core issues: 63-character Services in a
 * 63-character namespace, as many as fitServiceNames lets in, padded to exactly MAX_DNS_NAME_BYTES.
 */
function namesFillingTheBudget(): { names: string[]; services: number; refused: number } {
  const services: ServiceRef[] = Array.from({ length: 200 }, (_, i) => ({ namespace: NAMESPACE, name: longestLabel(`svc${String(i).padStart(3, '0')}`) }));
  const fit = fitServiceNames(services, undefined, CLUSTER_DOMAIN);
  const serviceNames = namespaceDnsNames(fit.fitted, CLUSTER_DOMAIN);
  expect(dnsNamesBytes(serviceNames)).toBe(fit.bytes);
  const names = [...serviceNames, ...paddingNames(MAX_DNS_NAME_BYTES - fit.bytes, 'pad')];
  return { names, services: fit.fitted.length, refused: fit.refused.length };
}

async function caFor(keyAlgorithm: KeyAlgorithm): Promise<TestCa> {
  const keyed = await issueCa(contextFor(keyAlgorithm));
  return { cert: keyed.certificate.pem, key: keyed.privateKeyPem, keyed };
}

/** ca.crt, client.crt and client.key in a fresh folder, for openssl and the Go client. */
function writeClientFiles(ca: string, client: KeyPair): { dir: string; caFile: string; certFile: string; keyFile: string } {
  const dir = mkdtempSync(join(tmpdir(), 'cert-size-'));
  const files = { dir, caFile: join(dir, 'ca.crt'), certFile: join(dir, 'client.crt'), keyFile: join(dir, 'client.key') };
  writeFileSync(files.caFile, ca);
  writeFileSync(files.certFile, client.cert);
  writeFileSync(files.keyFile, client.key, { mode: 0o600 });
  return files;
}

const goClientArgs = (address: string, serverName: string, files: ReturnType<typeof writeClientFiles>) => [
  '-addr',
  address,
  '-server-name',
  serverName,
  '-ca',
  files.caFile,
  '-cert',
  files.certFile,
  '-key',
  files.keyFile,
];

let goBin: { client: string; server: string };
const cleanup: string[] = [];

beforeAll(async () => {
  goBin = await buildGoInterop();
}, BUILD_TIMEOUT);

afterAll(() => {
  for (const dir of cleanup) rmSync(dir, { recursive: true, force: true });
});

/** A provider serving a test leaf, and each peer's way in. */
interface Served {
  readonly provider: RunningProvider;
  /** The ESO-side client, over grpc-js. */
  readonly client: SecretStoreProviderClient;
  /** The client's files, for openssl and the Go client. */
  readonly files: ReturnType<typeof writeClientFiles>;
  /** A raw Node TLS handshake as the client. */
  nodeHandshake(): Promise<ProbeOutcome>;
}

/** Serves `pki.server` under `serverName` while `use` runs, then closes the client and stops the provider. */
async function whileServing(pki: TestPkiSet, serverName: string, use: (served: Served) => Promise<void>): Promise<void> {
  const files = writeClientFiles(pki.ca.cert, pki.client);
  cleanup.push(files.dir);
  const provider = await startTestProvider(pki, { implementation: memoryProvider([]) });
  const channel = clientChannel(provider.address, pki.ca.cert, pki.client, {
    'grpc.ssl_target_name_override': serverName,
    'grpc.default_authority': serverName,
  });
  const client = createSecretStoreProviderClient(channel, { retry: false, timeoutMs: 20_000 });
  const nodeHandshake = () => probe(provider.server.port, { ca: pki.ca.cert, cert: pki.client.cert, key: pki.client.key, servername: serverName });
  try {
    await use({ provider, client, files, nodeHandshake });
  } finally {
    channel.close();
    await provider.stop();
  }
}

describe('the largest server leaf the core issues completes mTLS handshakes with every peer', () => {
  it.each(KEY_ALGORITHMS)(
    '%s, CA and leaf keys alike',
    async (keyAlgorithm) => {
      const { names, services, refused } = namesFillingTheBudget();
      expect([services, refused]).toEqual([129, 71]);
      expect(dnsNamesBytes(names)).toBe(MAX_DNS_NAME_BYTES);
      expect(names.every(isDnsName)).toBe(true);

      const ca = await caFor(keyAlgorithm);
      const context = contextFor(keyAlgorithm);
      const leaf = await issueServerLeaf(context, ca.keyed, names);
      const clientLeaf = await issueClientLeaf(context, ca.keyed);
      const pki: TestPkiSet = {
        ca,
        server: { cert: leaf.certificate.pem, key: leaf.privateKeyPem },
        client: { cert: clientLeaf.certificate.pem, key: clientLeaf.privateKeyPem },
      };
      expect(leaf.certificate.der.length).toBeLessThanOrEqual(MAX_SERVER_CERTIFICATE_BYTES);
      expect(Buffer.byteLength(leaf.certificate.pem)).toBeLessThan(POD_CERTIFICATE_PEM_CAP);
      expect(new X509Certificate(leaf.certificate.pem).subjectAltName?.split(', ')).toHaveLength(names.length);

      const serverName = names.at(-1)!; // the last padding name: the far end of the subjectAltName
      await whileServing(pki, serverName, async ({ provider, client, files, nodeHandshake }) => {
        // Node: the raw handshake saw this very leaf, and the ESO-side client's call went through.
        const node = await nodeHandshake();
        expect([node.accepted, node.serverSerial, node.errorMessage]).toEqual([true, leaf.certificate.serialNumber, undefined]);
        expect(await client.getSecret({ remoteRef: { key: 'db/password' } })).toEqual(Buffer.from('hunter2'));

        const openssl = await sClient(provider.server.port, files, serverName);
        expect(openssl.stdout).toContain('Verify return code: 0 (ok)');
        expect(openssl.stdout).toContain(leaf.certificate.pem.trim());
        expect(openssl.accepted).toBe(true);

        const go = await runProgram(goBin.client, goClientArgs(provider.address, serverName, files));
        expect([go.code, go.stderr]).toEqual([0, '']);
        const seen = JSON.parse(go.stdout) as { getSecret: string; serverCertificate: { dnsNames: string[]; verifiedChains: number } };
        expect(seen.getSecret).toBe(Buffer.from('hunter2').toString('base64'));
        expect(seen.serverCertificate.dnsNames).toEqual(names);
        expect(seen.serverCertificate.verifiedChains).toBe(1);
      });
    },
    TEST_TIMEOUT,
  );

  it('one dNSName byte more is refused by the core', async () => {
    const names = [...namespaceDnsNames([{ namespace: NAMESPACE, name: longestLabel('svc') }], CLUSTER_DOMAIN)];
    names.push(...paddingNames(MAX_DNS_NAME_BYTES + 1 - dnsNamesBytes(names), 'pad'));
    const ca = await caFor('ECDSA-P256');
    await expect(issueServerLeaf(contextFor('ECDSA-P256'), ca.keyed, names)).rejects.toThrow(
      new IssueError(
        `the ${names.length} DNS names take ${MAX_DNS_NAME_BYTES + 1} bytes, over the limit of ${MAX_DNS_NAME_BYTES}: the certificate would be too large for a TLS handshake`,
      ),
    );
  });
});

describe('control: a leaf just over 100 KiB, signed by the same CA with openssl, fails where the bound says it would', () => {
  it(
    'Node and openssl s_client refuse it with "excessive message size"; the core would not issue it',
    async () => {
      const ca = await caFor('ECDSA-P256');
      const clientLeaf = await issueClientLeaf(contextFor('ECDSA-P256'), ca.keyed);
      const names = paddingNames(CONTROL_DNS_NAME_BYTES, 'big');
      const pki: TestPkiSet = { ca, server: await opensslServerLeaf(ca, names), client: { cert: clientLeaf.certificate.pem, key: clientLeaf.privateKeyPem } };
      const der = new X509Certificate(pki.server.cert).raw;
      // Over the cap by more than the Certificate message's own framing (a few bytes), under Go's 256 KiB.
      expect(der.length).toBeGreaterThan(OPENSSL_CERTIFICATE_MESSAGE_CAP + 100);
      expect(der.length).toBeLessThan(OPENSSL_CERTIFICATE_MESSAGE_CAP + 4 * 1024);
      await expect(issueServerLeaf(contextFor('ECDSA-P256'), ca.keyed, names)).rejects.toBeInstanceOf(IssueError);

      const serverName = names[0]!;
      await whileServing(pki, serverName, async ({ provider, client, files, nodeHandshake }) => {
        const node = await nodeHandshake();
        expect([node.accepted, node.handshakeCompleted]).toEqual([false, false]);
        expect(node.errorMessage).toMatch(/excessive message size/);
        expect((await failureOf<Error>(client.getSecret({ remoteRef: { key: 'db/password' } }))).message).toMatch(/UNAVAILABLE.*excessive message size/);

        const openssl = await sClient(provider.server.port, files, serverName);
        expect([openssl.accepted, openssl.code]).toEqual([false, 1]);
        expect(openssl.stderr).toMatch(/excessive message size/);

        // Go's cap is 256 KiB: the same leaf works there, so Node and OpenSSL set the bound.
        const go = await runProgram(goBin.client, goClientArgs(provider.address, serverName, files));
        expect([go.code, go.stderr]).toEqual([0, '']);
      });
    },
    TEST_TIMEOUT,
  );
});
