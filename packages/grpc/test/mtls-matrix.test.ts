// Every way a connection must be refused, against the real provider server, asserting why.
//
// Node's TLS server never sends an alert for a client certificate that fails verification: its
// OpenSSL verify callback accepts everything, and after the handshake it destroys the socket
// (lib/_tls_wrap.js, onServerSocketSecure). Only OpenSSL's own refusals (no certificate, protocol
// version) reach the client as alerts. So for a bad client certificate the client observes a
// silent close with no HTTP/2 SETTINGS, and the reason is Node's verdict on that certificate
// under exactly the options grpc-js gives the server, read with rejectUnauthorized off.
//
// The provider serves TLS 1.3 only; the TLS 1.2 cases run against a second provider started with
// `minTlsVersion: 'TLSv1.2'`, the option for an ESO that speaks only TLS 1.2.
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createServer, type ConnectionOptions, type TLSSocket } from 'node:tls';
import { issueClientLeaf } from '@eso-mtls/core';
import { createNodeCryptoBackend } from '@eso-mtls/core/node';
import { ReloadingServerCredentials, type SecretStoreProvider } from '@eso-mtls/grpc';
import { p256Request } from '@eso-mtls/test-kit/openssl';
import { issueTestCa, issueTestClient, issueTestServer, TEST_POLICY, TEST_SERVER_NAME, type KeyPair, type TestCa } from '@eso-mtls/test-kit/pki';
import { startReloadingProvider, type ReloadingProvider } from '@eso-mtls/test-kit/reloading-provider';
import { probe, type ProbeOutcome } from '@eso-mtls/test-kit/tls-probe';

const implementation: SecretStoreProvider = { getSecret: () => ({}), getSecretMap: () => ({}) };
const DAY = 86_400_000;

let ca: TestCa;
let otherCa: TestCa;
let client: KeyPair;
let provider: ReloadingProvider;
let tls12Provider: ReloadingProvider;
const pki: Record<string, KeyPair> = {};

/** A self-signed leaf with EKU clientAuth, as someone would make one with the openssl CLI. */
function selfSignedClient(): KeyPair {
  const dir = mkdtempSync(join(tmpdir(), 'self-signed-'));
  try {
    execFileSync(
      'openssl',
      p256Request(
        'self-signed',
        join(dir, 'key.pem'),
        join(dir, 'cert.pem'),
        '/CN=external-secrets-core',
        '-days',
        '30',
        '-addext',
        'basicConstraints=critical,CA:FALSE',
        '-addext',
        'keyUsage=critical,digitalSignature',
        '-addext',
        'extendedKeyUsage=clientAuth',
      ),
      { stdio: 'pipe' },
    );
    return { cert: readFileSync(join(dir, 'cert.pem'), 'utf8'), key: readFileSync(join(dir, 'key.pem'), 'utf8') };
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

const asClient = (leaf: KeyPair | undefined, extra: ConnectionOptions = {}): ConnectionOptions => ({
  ca: ca.cert,
  servername: TEST_SERVER_NAME,
  ...(leaf ? { cert: leaf.cert, key: leaf.key } : {}),
  ...extra,
});

/** The provider a client of at most TLS `maxVersion` dials: the TLS 1.2 one when it is capped at 1.2. */
const providerFor = (options: ConnectionOptions): ReloadingProvider => (options.maxVersion === 'TLSv1.2' ? tls12Provider : provider);

/** Node's verdict on the client certificate under the server options of {@link providerFor} (constructor + current context). */
async function verdict(options: ConnectionOptions): Promise<string | null> {
  const credentials = new ReloadingServerCredentials(provider.watcher, options.maxVersion === 'TLSv1.2' ? { minTlsVersion: 'TLSv1.2' } : {});
  const server = createServer({
    ...credentials._getConstructorOptions(),
    ...credentials._getSecureContextOptions(),
    rejectUnauthorized: false,
    ALPNProtocols: ['h2'],
  });
  const seen = new Promise<string | null>((resolve) =>
    server.on('secureConnection', (s: TLSSocket) => {
      resolve(s.authorized ? null : String(s.authorizationError));
      s.destroy();
    }),
  );
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  try {
    const port = (server.address() as { port: number }).port;
    await probe(port, options);
    return await seen;
  } finally {
    server.close();
  }
}

beforeAll(async () => {
  ca = await issueTestCa();
  otherCa = await issueTestCa();
  client = await issueTestClient(ca);
  const crypto = createNodeCryptoBackend();
  const clientAt = async (now: number) => {
    const k = await issueClientLeaf({ crypto, policy: TEST_POLICY, now }, ca.keyed);
    return { cert: k.certificate.pem, key: k.privateKeyPem };
  };
  pki.otherCaClient = await issueTestClient(otherCa);
  pki.expired = await clientAt(Date.now() - TEST_POLICY.leafValidity - DAY);
  pki.notYetValid = await clientAt(Date.now() + DAY);
  pki.serverAsClient = await issueTestServer(ca);
  pki.selfSigned = selfSignedClient();
  pki.otherCaServer = await issueTestServer(otherCa);
  provider = await startReloadingProvider(ca.cert, await issueTestServer(ca), { implementation });
  tls12Provider = await startReloadingProvider(ca.cert, await issueTestServer(ca), { implementation, minTlsVersion: 'TLSv1.2' });
});

afterAll(async () => {
  await Promise.all([provider.stop(), tls12Provider.stop()]);
});

const refusedSilently = (o: ProbeOutcome) => ({ accepted: o.accepted, alert: /ALERT/.test(o.errorCode ?? '') });

describe('the provider accepts the ESO client certificate', () => {
  it.each([
    ['TLSv1.3', {}],
    ['TLSv1.2', { maxVersion: 'TLSv1.2' }],
  ] as const)('over %s', async (protocol, extra) => {
    const outcome = await probe(providerFor(extra).port, asClient(client, extra));
    expect([outcome.accepted, outcome.protocol, outcome.alpn]).toEqual([true, protocol, 'h2']);
    expect(await verdict(asClient(client, extra))).toBeNull();
  });
});

describe('refused by the server with a TLS alert', () => {
  it('no client certificate (TLS 1.3): alert certificate_required', async () => {
    const o = await probe(provider.port, asClient(undefined));
    expect([o.accepted, o.errorCode]).toEqual([false, 'ERR_SSL_TLSV13_ALERT_CERTIFICATE_REQUIRED']);
    expect(o.errorMessage).toMatch(/SSL alert number 116/);
  });

  it('no client certificate (TLS 1.2): alert handshake_failure', async () => {
    const o = await probe(tls12Provider.port, asClient(undefined, { maxVersion: 'TLSv1.2' }));
    // OpenSSL 3.2+ (Node 22.20+, 24, 26) names the alert 'ssl/tls alert', 3.0 (Node 20) 'sslv3 alert'; the number is the protocol's.
    expect([o.accepted, o.handshakeCompleted]).toEqual([false, false]);
    expect(o.errorCode).toMatch(/^ERR_SSL_(SSLV3|SSL\/TLS)_ALERT_HANDSHAKE_FAILURE$/);
    expect(o.errorMessage).toMatch(/SSL alert number 40/);
  });

  it('a client limited to TLS 1.2, by default: alert protocol_version', async () => {
    const o = await probe(provider.port, asClient(client, { maxVersion: 'TLSv1.2' }));
    expect([o.accepted, o.handshakeCompleted, o.errorCode]).toEqual([false, false, 'ERR_SSL_TLSV1_ALERT_PROTOCOL_VERSION']);
    expect(o.errorMessage).toMatch(/SSL alert number 70/);
  });

  it.each([
    ['by default', () => provider],
    ["with minTlsVersion 'TLSv1.2'", () => tls12Provider],
  ])('a client limited to TLS 1.1, %s: alert protocol_version', async (_floor, server) => {
    const o = await probe(server().port, asClient(client, { minVersion: 'TLSv1', maxVersion: 'TLSv1.1', ciphers: 'DEFAULT@SECLEVEL=0' }));
    expect([o.accepted, o.handshakeCompleted, o.errorCode]).toEqual([false, false, 'ERR_SSL_TLSV1_ALERT_PROTOCOL_VERSION']);
    expect(o.errorMessage).toMatch(/SSL alert number 70/);
  });
});

describe('refused by the server after verifying the client certificate (closed without SETTINGS)', () => {
  it.each([
    ['client certificate from another CA', 'otherCaClient', 'UNABLE_TO_VERIFY_LEAF_SIGNATURE'],
    ['expired client certificate', 'expired', 'CERT_HAS_EXPIRED'],
    ['not-yet-valid client certificate', 'notYetValid', 'CERT_NOT_YET_VALID'],
    ['a server certificate (EKU serverAuth) presented as client certificate', 'serverAsClient', 'INVALID_PURPOSE'],
    ['self-signed client certificate', 'selfSigned', 'DEPTH_ZERO_SELF_SIGNED_CERT'],
  ])('%s', async (_name, which, reason) => {
    for (const extra of [{}, { maxVersion: 'TLSv1.2' as const }]) {
      const o = await probe(providerFor(extra).port, asClient(pki[which], extra));
      expect(refusedSilently(o)).toEqual({ accepted: false, alert: false });
      // TLS 1.3 clients finish their side before the server judges them; TLS 1.2 clients never do.
      expect(o.handshakeCompleted).toBe(extra.maxVersion === undefined);
      expect(await verdict(asClient(pki[which], extra))).toBe(reason);
    }
  });
});

describe('refused by the client verifying the server', () => {
  it('a client expecting another server name', async () => {
    const o = await probe(provider.port, asClient(client, { servername: 'other-provider.provider-system.svc' }));
    expect([o.accepted, o.errorCode]).toEqual([false, 'ERR_TLS_CERT_ALTNAME_INVALID']);
    expect(o.errorMessage).toContain(`Host: other-provider.provider-system.svc. is not in the cert's altnames: DNS:${TEST_SERVER_NAME}`);
  });

  it('a server certificate from another CA', async () => {
    const impostor = await startReloadingProvider(otherCa.cert, pki.otherCaServer!, { implementation });
    try {
      const o = await probe(impostor.port, asClient(client));
      // OpenSSL completes the server's chain from its CA store, so the foreign root arrives too: not trusted for that.
      expect([o.accepted, o.errorCode]).toEqual([false, 'SELF_SIGNED_CERT_IN_CHAIN']);
    } finally {
      await impostor.stop();
    }
  });
});
