import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { V1Secret } from '@kubernetes/client-node';
import { type AuditEvent, type ControlPlane, startControlPlane } from '../../../testing/envtest/src/index.js';
import { writeKubeconfig } from '@eso-mtls/test-kit/kubeconfig';
import { p256Request } from '@eso-mtls/test-kit/openssl';
import { KubeRestClient, corePath, loadInClusterConnection, loadKubeconfigFile, redactProxyUrl } from '../src/index.js';
import { chooseProxy } from '../src/client/proxy.js';
import { proxyFromEnvironment, readProxyEnvironment, usesProxy } from '../src/client/no-proxy.js';
import { openTunnel } from '../src/client/proxy.js';
import { eventually } from '@eso-mtls/test-kit/eventually';
import { PROXY_SOURCE_ADDRESS, startConnectProxy } from '@eso-mtls/test-kit/connect-proxy';

// Proxies as client-go honours them: a kubeconfig's proxy-url for every host, else HTTPS_PROXY
// unless NO_PROXY (or loopback) exempts the apiserver; HTTP CONNECT with TLS to the apiserver inside.

describe("NO_PROXY and HTTPS_PROXY, by Go's httpproxy rules", () => {
  it.each([
    // [host, port, NO_PROXY, proxied?]
    ['api.corp', '443', '', true],
    ['localhost', '6443', '', false],
    ['127.0.0.1', '6443', '', false],
    ['127.8.9.10', '443', '', false],
    ['::1', '6443', '', false],
    ['::ffff:7f00:1', '443', '', false],
    ['foo.localhost', '443', '', true],
    ['example.com', '443', 'example.com', false],
    ['api.example.com', '443', 'example.com', false],
    ['notexample.com', '443', 'example.com', true],
    ['example.com', '443', '.example.com', true],
    ['api.example.com', '443', '.example.com', false],
    ['api.example.com', '443', '*.example.com', false],
    ['example.com', '443', '*.example.com', true],
    ['api.example.com', '6443', 'example.com:6443', false],
    ['api.example.com', '443', 'example.com:6443', true],
    ['api.example.com', '443', ' Example.COM , ', false],
    ['10.0.0.1', '6443', '10.0.0.1', false],
    ['10.0.0.1', '6443', '10.0.0.1:443', true],
    ['10.0.0.1', '443', '10.0.0.1:443', false],
    ['10.0.0.2', '443', '10.0.0.1', true],
    ['fd00::1', '6443', '[fd00::1]:6443', false],
    ['fd00::1', '6443', 'fd00::1', false],
    ['10.96.0.1', '443', '10.96.0.0/12', false],
    ['10.111.255.255', '443', '10.96.0.0/12', false],
    ['10.112.0.1', '443', '10.96.0.0/12', true],
    ['fd00::10', '443', 'fd00::/8', false],
    ['10.0.0.1', '443', 'example.com,.svc', true],
    ['10.0.0.1', '443', '10.0.0.1.example.com', true],
    ['kubernetes.default.svc', '443', '.svc', false],
    ['anything', '1', 'example.com,*', false],
    ['10.0.0.1', '443', '*', false],
    ['example.com', '443', ':443,,/8', true],
  ])('%s:%s with NO_PROXY=%j is proxied: %s', (host, port, noProxy, proxied) => {
    expect(usesProxy(host, port, noProxy)).toBe(proxied);
  });

  it('reads HTTPS_PROXY for https URLs (upper case first, an empty one skipped) and never HTTP_PROXY for them', () => {
    const target = new URL('https://10.0.0.1:6443');
    const decide = (env: Record<string, string>) => proxyFromEnvironment(target, readProxyEnvironment(env));
    expect(decide({ HTTPS_PROXY: 'http://upper:1', https_proxy: 'http://lower:1' })).toEqual({ variable: 'HTTPS_PROXY', value: 'http://upper:1' });
    expect(decide({ HTTPS_PROXY: '', https_proxy: 'http://lower:1' })).toEqual({ variable: 'https_proxy', value: 'http://lower:1' });
    expect(decide({ HTTP_PROXY: 'http://plain:1' })).toBeUndefined();
    expect(decide({ HTTPS_PROXY: 'http://p:1', no_proxy: '10.0.0.0/8' })).toBeUndefined();
    expect(decide({ HTTPS_PROXY: 'http://p:1', NO_PROXY: 'other', no_proxy: '10.0.0.0/8' })).toEqual({ variable: 'HTTPS_PROXY', value: 'http://p:1' });
    expect(proxyFromEnvironment(new URL('https://[fd00::1]/'), readProxyEnvironment({ HTTPS_PROXY: 'p:1', NO_PROXY: 'fd00::1:443' }))).toBeDefined();
    expect(proxyFromEnvironment(new URL('https://[fd00::1]/'), readProxyEnvironment({ HTTPS_PROXY: 'p:1', NO_PROXY: '[fd00::1]:443' }))).toBeUndefined();
  });
});

describe('chooseProxy', () => {
  const owner = 'kubeconfig /k: cluster "c"';

  it('a proxy-url applies to every host, loopback included, and wins over HTTPS_PROXY', () => {
    expect(chooseProxy('https://127.0.0.1:6443', 'http://p:3128', { HTTPS_PROXY: 'http://env:1' }, owner)).toEqual({ url: 'http://p:3128', from: 'proxy-url' });
  });

  it('without a proxy-url, HTTPS_PROXY decides; a value without a scheme is http://, as in Go', () => {
    expect(chooseProxy('https://10.0.0.1:6443', undefined, { https_proxy: 'proxy.corp:3128' }, owner)).toEqual({
      url: 'http://proxy.corp:3128',
      from: 'https_proxy',
    });
    expect(chooseProxy('https://10.0.0.1:6443', undefined, { HTTPS_PROXY: '10.1.1.1:3128' }, owner)).toEqual({
      url: 'http://10.1.1.1:3128',
      from: 'HTTPS_PROXY',
    });
    expect(chooseProxy('https://127.0.0.1:6443', undefined, { HTTPS_PROXY: 'http://p:1' }, owner)).toBeUndefined();
    // An exempted server never looks at the proxy's value.
    expect(chooseProxy('https://10.0.0.1:6443', undefined, { HTTPS_PROXY: 'socks5://p:1', NO_PROXY: '10.0.0.1' }, owner)).toBeUndefined();
  });

  it('refuses what it cannot honour, naming the setting, never the password', () => {
    const refusal = (run: () => unknown): string => {
      try {
        run();
      } catch (e) {
        return (e as Error).message;
      }
      return 'not refused';
    };
    const socks = refusal(() => chooseProxy('https://h', 'socks5://u:secret@p:1080', {}, owner));
    expect(socks).toBe(
      'kubeconfig /k: cluster "c" proxy-url socks5://u:xxxxx@p:1080: the socks5:// scheme is not supported; eso-mtls reaches the apiserver only through http:// proxies (HTTP CONNECT). Use an http:// proxy, or remove the setting',
    );
    expect(refusal(() => chooseProxy('https://h', 'https://p:443', {}, owner))).toMatch(
      /^kubeconfig \/k: cluster "c" proxy-url https:\/\/p:443: the https:\/\/ scheme is not supported/,
    );
    expect(refusal(() => chooseProxy('https://h', 'proxy:3128', {}, owner))).toMatch(/proxy-url proxy:3128: the proxy:\/\/ scheme is not supported/);
    expect(refusal(() => chooseProxy('https://10.0.0.1', undefined, { HTTPS_PROXY: 'socks5://u:secret@p:1080' }, owner))).toMatch(
      /^HTTPS_PROXY socks5:\/\/u:xxxxx@p:1080: the socks5:\/\/ scheme is not supported/,
    );
    expect(refusal(() => chooseProxy('http://10.0.0.1:8080', 'http://p:1', {}, owner))).toBe(
      'kubeconfig /k: cluster "c" proxy-url http://p:1 applies to the apiserver http://10.0.0.1:8080, but only https:// apiservers are reached through a proxy (CONNECT); use https, or remove the proxy setting',
    );
    for (const message of [socks]) expect(message).not.toContain('secret');
  });

  it("redacts a password, as Go's url.Redacted", () => {
    expect(redactProxyUrl('http://user:pa%40ss@p:1')).toBe('http://user:xxxxx@p:1');
    expect(redactProxyUrl('http://user@p:1')).toBe('http://user@p:1');
    expect(redactProxyUrl('http://p:1')).toBe('http://p:1');
  });
});

describe('loaders choose the proxy', () => {
  let dir: string;
  beforeAll(() => {
    dir = mkdtempSync(join(tmpdir(), 'proxy-test-'));
  });
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  it('in-cluster: HTTPS_PROXY applies to the service address unless NO_PROXY exempts it, as client-go', () => {
    writeFileSync(join(dir, 'ca.crt'), 'CA');
    writeFileSync(join(dir, 'token'), 't');
    const env = { KUBERNETES_SERVICE_HOST: '10.96.0.1', KUBERNETES_SERVICE_PORT: '443', HTTPS_PROXY: 'http://u:pw@proxy.corp:3128' };
    const proxied = loadInClusterConnection({ env, serviceAccountDir: dir });
    expect(proxied.proxy).toEqual({ url: 'http://u:pw@proxy.corp:3128', from: 'HTTPS_PROXY' });
    expect(proxied.description).toBe(`in-cluster service account (${dir}) through proxy http://u:xxxxx@proxy.corp:3128 (HTTPS_PROXY)`);
    expect(loadInClusterConnection({ env: { ...env, NO_PROXY: '10.96.0.0/12' }, serviceAccountDir: dir }).proxy).toBeUndefined();
    expect(
      loadInClusterConnection({ env: { KUBERNETES_SERVICE_HOST: '10.96.0.1', KUBERNETES_SERVICE_PORT: '443' }, serviceAccountDir: dir }).proxy,
    ).toBeUndefined();
    expect(() => loadInClusterConnection({ env: { ...env, HTTPS_PROXY: 'socks5://p:1080' }, serviceAccountDir: dir })).toThrow(
      /^HTTPS_PROXY socks5:\/\/p:1080: the socks5:\/\/ scheme is not supported/,
    );
  });

  it('a kubeconfig file: HTTPS_PROXY when the cluster has no proxy-url', () => {
    const path = join(dir, 'env-kubeconfig');
    writeKubeconfig(path, { name: 'k', fields: { server: 'https://api.corp:6443' } });
    expect(loadKubeconfigFile(path, { env: { HTTPS_PROXY: 'http://p:3128' } }).proxy).toEqual({ url: 'http://p:3128', from: 'HTTPS_PROXY' });
    expect(loadKubeconfigFile(path, { env: { HTTPS_PROXY: 'http://p:3128', NO_PROXY: '.corp' } }).proxy).toBeUndefined();
  });
});

describe('the CONNECT tunnel', () => {
  it('gives up on a proxy that accepts the CONNECT and never answers', async () => {
    const silent = createServer((socket) => socket.on('data', () => undefined));
    await new Promise<void>((r) => silent.listen(0, '127.0.0.1', r));
    const port = (silent.address() as { port: number }).port;
    try {
      await expect(openTunnel(new URL(`http://u:secret@127.0.0.1:${port}`), '127.0.0.1:6443', 300)).rejects.toThrow(
        `proxy http://u:xxxxx@127.0.0.1:${port}: no answer to CONNECT 127.0.0.1:6443 within 300 ms`,
      );
    } finally {
      silent.close();
    }
  });
});

describe('through a CONNECT proxy to the real apiserver', () => {
  let plane: ControlPlane;
  let dir: string;
  const credentials = { user: 'proxy-user', password: 'p@ss:word' };
  const expectedAuthorization = `Basic ${Buffer.from(`${credentials.user}:${credentials.password}`).toString('base64')}`;
  let proxy: Awaited<ReturnType<typeof startConnectProxy>>;

  beforeAll(async () => {
    plane = await startControlPlane({ audit: true });
    dir = mkdtempSync(join(tmpdir(), 'proxy-e2e-'));
    proxy = await startConnectProxy({ requireAuthorization: expectedAuthorization });
    const api = new KubeRestClient(loadKubeconfigFile(plane.identity('admin').kubeconfigPath));
    try {
      await api.create(corePath('namespaces'), { apiVersion: 'v1', kind: 'Namespace', metadata: { name: 'proxied' } });
    } finally {
      api.close();
    }
  }, 120_000);
  afterAll(async () => {
    await proxy?.close();
    await plane?.stop();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  /** The harness's admin kubeconfig with a proxy-url (and optionally another CA). */
  function kubeconfigWithProxy(proxyUrl: string, caPem = plane.caPem): string {
    return writeKubeconfig(
      join(dir, `kubeconfig-${Math.random().toString(36).slice(2)}`),
      { name: 'envtest', fields: { server: plane.url, 'certificate-authority-data': Buffer.from(caPem).toString('base64'), 'proxy-url': proxyUrl } },
      { name: 'admin', fields: { token: plane.identity('admin').token } },
    );
  }
  const withCredentials = (password: string): string =>
    `http://${encodeURIComponent(credentials.user)}:${encodeURIComponent(password)}@127.0.0.1:${proxy.port}`;
  const audited = (match: (e: AuditEvent) => boolean): (AuditEvent & { sourceIPs?: string[] })[] =>
    plane.auditEvents().filter((e) => e.stage === 'ResponseComplete' && match(e));

  it("a GET, a write and a watch go through the proxy-url's proxy, and the apiserver logs them from the proxy's address", async () => {
    const apiAuthority = new URL(plane.url).host;
    const before = proxy.tunnels.length;
    const connection = loadKubeconfigFile(kubeconfigWithProxy(withCredentials(credentials.password)));
    expect(connection.proxy?.from).toBe('proxy-url');
    expect(connection.description).toContain(`through proxy http://proxy-user:xxxxx@127.0.0.1:${proxy.port} (proxy-url)`);
    const api = new KubeRestClient(connection);
    const events: string[] = [];
    try {
      const list = await api.get<{ metadata: { resourceVersion: string } }>(corePath('secrets', 'proxied'));
      const watch = await api.watch(
        corePath('secrets', 'proxied'),
        { resourceVersion: list.metadata.resourceVersion },
        (type, object) => events.push(`${type} ${(object as V1Secret).metadata?.name}`),
        () => undefined,
      );
      await api.create(corePath('secrets', 'proxied'), { apiVersion: 'v1', kind: 'Secret', metadata: { name: 'via-proxy' }, data: { v: 'eA==' } });
      await expect(api.get<V1Secret>(corePath('secrets', 'proxied', 'via-proxy'))).resolves.toMatchObject({ metadata: { name: 'via-proxy' } });
      await eventually(() => expect(events).toEqual(['ADDED via-proxy']));
      watch.abort();
    } finally {
      api.close();
    }

    // The proxy: one tunnel for the request pool, one for the watch, both to the apiserver, with the credentials.
    const tunnels = proxy.tunnels.slice(before);
    expect(tunnels.map((t) => [t.target, t.status, t.proxyAuthorization])).toEqual([
      [apiAuthority, 200, expectedAuthorization],
      [apiAuthority, 200, expectedAuthorization],
    ]);
    expect(api.connectionsOpened).toBe(2);
    for (const t of tunnels) expect(t.bytesUp > 0 && t.bytesDown > 0).toBe(true);

    // The apiserver: each request arrived, from the address the proxy connects from.
    await eventually(() => {
      const ours = audited((e) => e.user.username === 'admin' && e.objectRef?.namespace === 'proxied' && e.objectRef?.resource === 'secrets');
      const summary = ours.map((e) => `${e.verb} ${e.objectRef?.name ?? ''} ${e.responseStatus?.code} ${e.sourceIPs?.join(',')}`);
      expect(summary).toEqual(
        expect.arrayContaining([
          `list  200 ${PROXY_SOURCE_ADDRESS}`,
          `watch  200 ${PROXY_SOURCE_ADDRESS}`,
          `create via-proxy 201 ${PROXY_SOURCE_ADDRESS}`,
          `get via-proxy 200 ${PROXY_SOURCE_ADDRESS}`,
        ]),
      );
      expect(ours.every((e) => e.sourceIPs?.[0] === PROXY_SOURCE_ADDRESS)).toBe(true);
    });
  });

  it('keeps verifying the apiserver inside the tunnel: a kubeconfig with another CA fails the handshake', async () => {
    execFileSync('openssl', p256Request('self-signed', join(dir, 'foreign.key'), join(dir, 'foreign.crt'), '/CN=foreign-ca', '-days', '1'), {
      stdio: 'ignore',
    });
    const before = proxy.tunnels.length;
    const api = new KubeRestClient(
      loadKubeconfigFile(kubeconfigWithProxy(withCredentials(credentials.password), readFileSync(join(dir, 'foreign.crt'), 'utf8'))),
    );
    try {
      await expect(api.get(corePath('namespaces', undefined, 'default'))).rejects.toThrow(/self[- ]signed|unable to verify|issuer certificate/);
    } finally {
      api.close();
    }
    expect(proxy.tunnels.slice(before).map((t) => t.status)).toEqual([200]);
  });

  it('a refused CONNECT (407) is an error naming the proxy without its password, for requests and watches', async () => {
    const api = new KubeRestClient(loadKubeconfigFile(kubeconfigWithProxy(withCredentials('wrong-secret'))));
    const expected = `proxy http://proxy-user:xxxxx@127.0.0.1:${proxy.port} refused CONNECT ${new URL(plane.url).host}: HTTP 407 Proxy Authentication Required`;
    try {
      const error = await api.get(corePath('namespaces', undefined, 'default')).catch((e: unknown) => e as Error);
      expect((error as Error).message).toBe(expected);
      expect((error as Error).message).not.toContain('wrong-secret');
      let ended: unknown;
      await api.watch(
        corePath('secrets', 'proxied'),
        {},
        () => undefined,
        (e) => {
          ended = e;
        },
      );
      await eventually(() => expect((ended as Error | undefined)?.message).toBe(expected));
    } finally {
      api.close();
    }
  });
});
