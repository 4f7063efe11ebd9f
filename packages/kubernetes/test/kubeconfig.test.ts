import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { execFileSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, request } from 'node:https';
import type { TLSSocket } from 'node:tls';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { type ControlPlane, startControlPlane } from '../../../testing/envtest/src/index.js';
import { writeKubeconfig } from '@eso-mtls/test-kit/kubeconfig';
import { p256Request, signRequest } from '@eso-mtls/test-kit/openssl';
import { type ClusterConnection, KubeRestClient, UnsupportedKubeconfigError, corePath, loadInClusterConnection, loadKubeconfigFile } from '../src/index.js';
import { TOKEN_REREAD_MS } from '../src/client/kubeconfig.js';

let dir: string;
beforeAll(() => {
  dir = mkdtempSync(join(tmpdir(), 'kubeconfig-test-'));
});
afterAll(() => rmSync(dir, { recursive: true, force: true }));

let files = 0;
/** Writes a kubeconfig with one context `c` joining `cluster` and `user`; returns its path. */
function kubeconfig(cluster: Record<string, unknown>, user: Record<string, unknown> = {}, extra: Record<string, unknown> = {}, sub = ''): string {
  const folder = join(dir, sub);
  mkdirSync(folder, { recursive: true });
  return writeKubeconfig(join(folder, `config-${++files}`), { name: 'k', fields: cluster }, { name: 'u', fields: user }, extra);
}

const headersOf = async (c: ClusterConnection): Promise<Record<string, string>> => {
  const h: Record<string, string> = {};
  await c.authorize(h);
  return h;
};

describe('loadKubeconfigFile', () => {
  it('reads server, CA data, tls-server-name, skip-verify and a token', async () => {
    const path = kubeconfig(
      {
        server: 'https://10.0.0.1:6443',
        'certificate-authority-data': Buffer.from('CA PEM').toString('base64'),
        'tls-server-name': 'kubernetes',
        'insecure-skip-tls-verify': true,
      },
      { token: 'abc' },
    );
    const c = loadKubeconfigFile(path);
    expect(c.server).toBe('https://10.0.0.1:6443');
    expect(c.tls).toEqual({ ca: Buffer.from('CA PEM'), rejectUnauthorized: false, servername: 'kubernetes' });
    expect(await headersOf(c)).toEqual({ Authorization: 'Bearer abc' });
    expect(c.description).toBe(`kubeconfig ${path} (context c, cluster k, user u)`);
    expect(c.description).not.toContain('abc');
  });

  it('resolves certificate files relative to the kubeconfig, and reads client certificate data', async () => {
    mkdirSync(join(dir, 'rel', 'pki'), { recursive: true });
    writeFileSync(join(dir, 'rel', 'pki', 'ca.crt'), 'THE CA');
    const path = kubeconfig(
      { server: 'https://h', 'certificate-authority': 'pki/ca.crt' },
      {
        'client-certificate-data': Buffer.from('CERT').toString('base64'),
        'client-key-data': Buffer.from('KEY').toString('base64'),
      },
      {},
      'rel',
    );
    const c = loadKubeconfigFile(path);
    expect(c.tls).toEqual({ ca: Buffer.from('THE CA'), cert: Buffer.from('CERT'), key: Buffer.from('KEY') });
    expect(await headersOf(c)).toEqual({});
  });

  it('re-reads a tokenFile once the interval has passed, and keeps the last good token if the file vanishes', async () => {
    const tokenPath = join(dir, 'token-file');
    writeFileSync(tokenPath, 'first\n');
    let t = 0;
    const c = loadKubeconfigFile(kubeconfig({ server: 'https://h' }, { tokenFile: tokenPath }), { now: () => t });
    expect(await headersOf(c)).toEqual({ Authorization: 'Bearer first' });
    writeFileSync(tokenPath, 'second');
    t += TOKEN_REREAD_MS - 1;
    expect(await headersOf(c)).toEqual({ Authorization: 'Bearer first' });
    t += 1;
    expect(await headersOf(c)).toEqual({ Authorization: 'Bearer second' });
    rmSync(tokenPath);
    t += TOKEN_REREAD_MS;
    expect(await headersOf(c)).toEqual({ Authorization: 'Bearer second' });
  });

  it('sends basic auth', async () => {
    const c = loadKubeconfigFile(kubeconfig({ server: 'https://h' }, { username: 'ann', password: 'pw' }));
    expect(await headersOf(c)).toEqual({ Authorization: `Basic ${Buffer.from('ann:pw').toString('base64')}` });
  });

  it('uses the named context instead of current-context', () => {
    const path = kubeconfig(
      { server: 'https://one' },
      {},
      {
        contexts: [
          { name: 'c', context: { cluster: 'k', user: 'u' } },
          { name: 'other', context: { cluster: 'k2' } },
        ],
        clusters: [
          { name: 'k', cluster: { server: 'https://one' } },
          { name: 'k2', cluster: { server: 'https://two' } },
        ],
      },
    );
    expect(loadKubeconfigFile(path, { context: 'other' }).server).toBe('https://two');
  });

  it.each([
    ['exec', {}, { exec: { apiVersion: 'client.authentication.k8s.io/v1', command: 'aws' } }, 'user exec'],
    ['auth-provider', {}, { 'auth-provider': { name: 'oidc' } }, 'user auth-provider'],
    ['impersonation', {}, { as: 'someone' }, 'user as'],
  ])('throws UnsupportedKubeconfigError for %s', (_name, cluster, user, feature) => {
    const path = kubeconfig({ server: 'https://h', ...cluster }, user);
    const error = (() => {
      try {
        loadKubeconfigFile(path);
      } catch (e) {
        return e;
      }
      return undefined;
    })();
    expect(error).toBeInstanceOf(UnsupportedKubeconfigError);
    expect(error).toMatchObject({ feature, path });
  });

  it('reads proxy-url into the connection (for every host, as client-go), and refuses a scheme it cannot honour, naming proxy-url', () => {
    const path = kubeconfig({ server: 'https://127.0.0.1:6443', 'proxy-url': 'http://u:pw@proxy:3128' });
    const c = loadKubeconfigFile(path, { env: {} });
    expect(c.proxy).toEqual({ url: 'http://u:pw@proxy:3128', from: 'proxy-url' });
    expect(c.description).toBe(`kubeconfig ${path} (context c, cluster k, user u) through proxy http://u:xxxxx@proxy:3128 (proxy-url)`);
    for (const [proxyUrl, scheme] of [
      ['socks5://proxy:1080', 'socks5'],
      ['https://proxy:3129', 'https'],
    ]) {
      const refused = kubeconfig({ server: 'https://h', 'proxy-url': proxyUrl });
      const error = (() => {
        try {
          loadKubeconfigFile(refused);
        } catch (e) {
          return e as Error;
        }
        return undefined;
      })();
      // Not UnsupportedKubeconfigError: client-node would not honour it either, so nothing falls back.
      expect(error).not.toBeInstanceOf(UnsupportedKubeconfigError);
      expect(error?.message).toBe(
        `kubeconfig ${refused}: cluster "k" proxy-url ${proxyUrl}: the ${scheme}:// scheme is not supported; eso-mtls reaches the apiserver only through http:// proxies (HTTP CONNECT). Use an http:// proxy, or remove the setting`,
      );
    }
    const notString = kubeconfig({ server: 'https://h', 'proxy-url': 3128 });
    expect(() => loadKubeconfigFile(notString)).toThrow(`kubeconfig ${notString}: cluster "k" proxy-url must be a string, like http://proxy:3128`);
  });

  it.each([
    ['no current-context', { 'current-context': '' }, 'no current-context is set'],
    ['an unknown context', { 'current-context': 'nope' }, 'context "nope" is not defined under contexts'],
    ['an unknown cluster', { clusters: [] }, 'cluster "k" (of context "c") is not defined under clusters'],
    ['an unknown user', { users: [] }, 'user "u" (of context "c") is not defined under users'],
  ])('names what is wrong: %s', (_name, extra, message) => {
    const path = kubeconfig({ server: 'https://h' }, {}, extra);
    expect(() => loadKubeconfigFile(path)).toThrow(`kubeconfig ${path}: ${message}`);
  });

  it('names a missing server, an unreadable certificate file, a key without a certificate, and a file that is not a kubeconfig', () => {
    const noServer = kubeconfig({});
    expect(() => loadKubeconfigFile(noServer)).toThrow(`kubeconfig ${noServer}: cluster "k" has no server`);
    const missingCa = kubeconfig({ server: 'https://h', 'certificate-authority': '/nonexistent/ca.crt' });
    expect(() => loadKubeconfigFile(missingCa)).toThrow(`kubeconfig ${missingCa}: cluster "k" certificate-authority /nonexistent/ca.crt: ENOENT`);
    const halfPair = kubeconfig({ server: 'https://h' }, { 'client-key-data': 'S0VZ' });
    expect(() => loadKubeconfigFile(halfPair)).toThrow('has a client certificate without its key, or a key without its certificate');
    const scalar = join(dir, 'scalar');
    writeFileSync(scalar, 'just a string');
    expect(() => loadKubeconfigFile(scalar)).toThrow(`kubeconfig ${scalar}: not a kubeconfig`);
    expect(() => loadKubeconfigFile(join(dir, 'absent'))).toThrow(`kubeconfig ${join(dir, 'absent')}: cannot read it: ENOENT`);
  });
});

describe('loadInClusterConnection', () => {
  it('says what is missing', () => {
    expect(() => loadInClusterConnection({ env: {} })).toThrow('not running in a cluster (KUBERNETES_SERVICE_HOST/KUBERNETES_SERVICE_PORT unset)');
    const empty = mkdtempSync(join(dir, 'sa-'));
    expect(() => loadInClusterConnection({ env: { KUBERNETES_SERVICE_HOST: 'h', KUBERNETES_SERVICE_PORT: '443' }, serviceAccountDir: empty })).toThrow(
      `in-cluster configuration needs the service account CA at ${empty}/ca.crt`,
    );
    writeFileSync(join(empty, 'ca.crt'), 'CA');
    expect(() => loadInClusterConnection({ env: { KUBERNETES_SERVICE_HOST: 'h', KUBERNETES_SERVICE_PORT: '443' }, serviceAccountDir: empty })).toThrow(
      /in-cluster service account token .*token: ENOENT.*automountServiceAccountToken/,
    );
  });

  it('brackets an IPv6 service host', () => {
    const sa = mkdtempSync(join(dir, 'sa-'));
    writeFileSync(join(sa, 'ca.crt'), 'CA');
    writeFileSync(join(sa, 'token'), 't');
    expect(loadInClusterConnection({ env: { KUBERNETES_SERVICE_HOST: 'fd00::1', KUBERNETES_SERVICE_PORT: '443' }, serviceAccountDir: sa }).server).toBe(
      'https://[fd00::1]:443',
    );
  });
});

describe('against the real apiserver', () => {
  let plane: ControlPlane;
  beforeAll(async () => {
    plane = await startControlPlane();
  }, 120_000);
  afterAll(async () => {
    await plane?.stop();
  });

  it('a harness kubeconfig (CA data, token) reads namespaces', async () => {
    const api = new KubeRestClient(loadKubeconfigFile(plane.identity('admin').kubeconfigPath));
    try {
      await expect(api.get(corePath('namespaces', undefined, 'default'))).resolves.toMatchObject({ metadata: { name: 'default' } });
    } finally {
      api.close();
    }
  });

  it('in-cluster: the service account directory and KUBERNETES_SERVICE_* reach the apiserver, and a rotated token is used after the interval', async () => {
    const sa = mkdtempSync(join(dir, 'sa-'));
    writeFileSync(join(sa, 'ca.crt'), plane.caPem);
    writeFileSync(join(sa, 'token'), 'not-a-valid-token');
    const { hostname, port } = new URL(plane.url);
    let t = 0;
    const api = new KubeRestClient(
      loadInClusterConnection({ env: { KUBERNETES_SERVICE_HOST: hostname, KUBERNETES_SERVICE_PORT: port }, serviceAccountDir: sa, now: () => t }),
    );
    try {
      await expect(api.get(corePath('namespaces', undefined, 'default'))).rejects.toMatchObject({ code: 401 });
      writeFileSync(join(sa, 'token'), plane.identity('admin').token);
      t += TOKEN_REREAD_MS;
      await expect(api.get(corePath('namespaces', undefined, 'default'))).resolves.toMatchObject({ metadata: { name: 'default' } });
    } finally {
      api.close();
    }
  });
});

describe('client certificates over a real TLS handshake', () => {
  it('presents the kubeconfig client certificate, verified against the CA by a requestCert server', async () => {
    const pki = mkdtempSync(join(dir, 'pki-'));
    const ssl = (...args: string[]): void => void execFileSync('openssl', args, { cwd: pki, stdio: 'ignore' });
    ssl(...p256Request('self-signed', 'ca.key', 'ca.crt', '/CN=test-ca', '-days', '1'));
    for (const [name, ext] of [
      ['server', 'subjectAltName=IP:127.0.0.1\nextendedKeyUsage=serverAuth'],
      ['client', 'extendedKeyUsage=clientAuth'],
    ] as const) {
      writeFileSync(join(pki, `${name}.ext`), ext);
      ssl(...p256Request('csr', `${name}.key`, `${name}.csr`, `/CN=${name}-identity`));
      ssl(...signRequest(`${name}.csr`, 'ca.crt', 'ca.key', `${name}.crt`, '-CAcreateserial', '-days', '1', '-extfile', `${name}.ext`));
    }
    const pem = (f: string): Buffer => readFileSync(join(pki, f));
    const seen: string[] = [];
    const server = createServer(
      { key: pem('server.key'), cert: pem('server.crt'), ca: pem('ca.crt'), requestCert: true, rejectUnauthorized: true },
      (req, res) => {
        seen.push(String((req.socket as TLSSocket).getPeerCertificate().subject.CN));
        res.setHeader('Content-Type', 'application/json');
        res.end('{"kind":"Namespace","metadata":{"name":"default"}}');
      },
    );
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    const port = (server.address() as { port: number }).port;
    const path = kubeconfig(
      { server: `https://127.0.0.1:${port}`, 'certificate-authority': join(pki, 'ca.crt') },
      {
        'client-certificate': join(pki, 'client.crt'),
        'client-key': join(pki, 'client.key'),
      },
    );
    const api = new KubeRestClient(loadKubeconfigFile(path));
    try {
      await expect(api.get(corePath('namespaces', undefined, 'default'))).resolves.toMatchObject({ metadata: { name: 'default' } });
      expect(seen).toEqual(['client-identity']);
      // Without the client certificate the same server refuses the handshake.
      const anonymous = await new Promise<string>((resolve) => {
        const req = request({ host: '127.0.0.1', port, ca: pem('ca.crt'), path: '/' }, (res) => resolve(`answered ${res.statusCode}`));
        req.on('error', (e) => resolve(`refused: ${e.message}`));
        req.end();
      });
      expect(anonymous).toMatch(/^refused: /);
      expect(seen).toEqual(['client-identity']);
    } finally {
      api.close();
      server.close();
    }
  });
});
