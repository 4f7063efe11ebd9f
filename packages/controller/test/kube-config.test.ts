import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { chmodSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { type ClusterConnection, KubeRestClient, corePath } from '@eso-mtls/kubernetes';
import { type ControlPlane, startControlPlane } from '../../../testing/envtest/src/index.js';
import { writeKubeconfig as writeKubeconfigFile } from '@eso-mtls/test-kit/kubeconfig';
import { type ConnectProxy, startConnectProxy } from '@eso-mtls/test-kit/connect-proxy';
import { loadConnection } from '../src/index.js';

// How the controller gets its apiserver connection: our reader for plain kubeconfigs and in-cluster,
// client-node's KubeConfig (loaded only then) for what only it supports, here an exec plugin.
// Proxies are ours either way: proxy-url, else HTTPS_PROXY/NO_PROXY.

let plane: ControlPlane;
let dir: string;
let proxy: ConnectProxy;

beforeAll(async () => {
  plane = await startControlPlane();
  dir = mkdtempSync(join(tmpdir(), 'controller-kubeconfig-'));
  proxy = await startConnectProxy();
}, 120_000);

afterAll(async () => {
  await proxy?.close();
  await plane?.stop();
  rmSync(dir, { recursive: true, force: true });
});

/** A kubeconfig against the test apiserver with `cluster` and `user` fields added. */
function writeKubeconfig(name: string, cluster: Record<string, unknown>, user: Record<string, unknown>): string {
  return writeKubeconfigFile(
    join(dir, name),
    { name: 'envtest', fields: { server: plane.url, 'certificate-authority-data': Buffer.from(plane.caPem).toString('base64'), ...cluster } },
    { name: 'u', fields: user },
  );
}

/** Writes an exec credential plugin that prints the admin token; returns its path. */
function credentialPlugin(): string {
  const plugin = join(dir, 'credential-plugin.sh');
  const credential = { apiVersion: 'client.authentication.k8s.io/v1', kind: 'ExecCredential', status: { token: plane.identity('admin').token } };
  writeFileSync(plugin, `#!/bin/sh\necho '${JSON.stringify(credential)}'\n`);
  chmodSync(plugin, 0o755);
  return plugin;
}

async function defaultNamespaceVia(connection: ClusterConnection): Promise<unknown> {
  const api = new KubeRestClient(connection);
  try {
    return await api.get(corePath('namespaces', undefined, 'default'));
  } finally {
    api.close();
  }
}

describe('loadConnection', () => {
  it('reads a plain kubeconfig with its own reader', async () => {
    const { connection, source } = await loadConnection(plane.identity('admin').kubeconfigPath, {});
    expect(source).toEqual({ kind: 'file', path: plane.identity('admin').kubeconfigPath, reader: 'eso-mtls' });
    await expect(defaultNamespaceVia(connection)).resolves.toMatchObject({ metadata: { name: 'default' } });
  });

  it("hands a kubeconfig with an exec plugin to client-node, and the plugin's token reaches the apiserver", async () => {
    const path = writeKubeconfig(
      'exec-kubeconfig',
      {},
      { exec: { apiVersion: 'client.authentication.k8s.io/v1', command: credentialPlugin(), interactiveMode: 'Never' } },
    );
    const { connection, source } = await loadConnection(path, {});
    expect(source).toEqual({ kind: 'file', path, reader: 'client-node', feature: 'user exec' });
    await expect(defaultNamespaceVia(connection)).resolves.toMatchObject({ metadata: { name: 'default' } });
  });

  it('reads a proxy-url itself (client-node is not loaded for it), and the requests tunnel through that proxy', async () => {
    const path = writeKubeconfig('proxy-kubeconfig', { 'proxy-url': proxy.url }, { token: plane.identity('admin').token });
    const before = proxy.tunnels.length;
    const { connection, source } = await loadConnection(path, {});
    expect(source).toEqual({ kind: 'file', path, reader: 'eso-mtls', proxy: `${proxy.url} (proxy-url)` });
    await expect(defaultNamespaceVia(connection)).resolves.toMatchObject({ metadata: { name: 'default' } });
    expect(proxy.tunnels.slice(before).map((t) => [t.target, t.status])).toEqual([[new URL(plane.url).host, 200]]);
  });

  it('honours the proxy-url of a kubeconfig that client-node reads (exec plugin), instead of dropping it', async () => {
    const path = writeKubeconfig(
      'exec-proxy-kubeconfig',
      { 'proxy-url': proxy.url },
      { exec: { apiVersion: 'client.authentication.k8s.io/v1', command: credentialPlugin(), interactiveMode: 'Never' } },
    );
    const before = proxy.tunnels.length;
    const { connection, source } = await loadConnection(path, {});
    expect(source).toEqual({ kind: 'file', path, reader: 'client-node', feature: 'user exec', proxy: `${proxy.url} (proxy-url)` });
    await expect(defaultNamespaceVia(connection)).resolves.toMatchObject({ metadata: { name: 'default' } });
    expect(proxy.tunnels.slice(before).map((t) => [t.target, t.status])).toEqual([[new URL(plane.url).host, 200]]);
  });

  it('refuses at start a proxy it cannot honour, naming proxy-url, for either reader', async () => {
    const plain = writeKubeconfig('socks-kubeconfig', { 'proxy-url': 'socks5://127.0.0.1:1080' }, { token: 't' });
    await expect(loadConnection(plain, {})).rejects.toThrow(
      `kubeconfig ${plain}: cluster "envtest" proxy-url socks5://127.0.0.1:1080: the socks5:// scheme is not supported`,
    );
    const exec = writeKubeconfig(
      'exec-socks-kubeconfig',
      { 'proxy-url': 'socks5://127.0.0.1:1080' },
      { exec: { apiVersion: 'client.authentication.k8s.io/v1', command: credentialPlugin() } },
    );
    await expect(loadConnection(exec, {})).rejects.toThrow(
      'kubeconfig cluster "envtest" proxy-url socks5://127.0.0.1:1080: the socks5:// scheme is not supported',
    );
  });

  it('says what is missing: no such file, not in a cluster', async () => {
    await expect(loadConnection(join(dir, 'absent'), {})).rejects.toThrow(`--kubeconfig ${join(dir, 'absent')}: no such file`);
    await expect(loadConnection(undefined, {})).rejects.toThrow(
      'not running in a cluster (KUBERNETES_SERVICE_HOST/KUBERNETES_SERVICE_PORT unset): pass --kubeconfig or set ESO_MTLS_KUBECONFIG',
    );
  });
});
