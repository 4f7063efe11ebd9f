import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { chmodSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { type ClusterConnection, KubeRestClient, corePath } from '@eso-mtls/kubernetes';
import { stringify } from 'yaml';
import { type ControlPlane, startControlPlane } from '../../../testing/envtest/src/index.js';
import { loadConnection } from '../src/index.js';

// How the controller gets its apiserver connection: our reader for plain kubeconfigs and in-cluster,
// client-node's KubeConfig (loaded only then) for what only it supports, here an exec plugin.

let plane: ControlPlane;
let dir: string;

beforeAll(async () => {
  plane = await startControlPlane();
  dir = mkdtempSync(join(tmpdir(), 'controller-kubeconfig-'));
}, 120_000);

afterAll(async () => {
  await plane?.stop();
  rmSync(dir, { recursive: true, force: true });
});

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

  it('hands a kubeconfig with an exec plugin to client-node, and the plugin\'s token reaches the apiserver', async () => {
    const plugin = join(dir, 'credential-plugin.sh');
    const credential = { apiVersion: 'client.authentication.k8s.io/v1', kind: 'ExecCredential', status: { token: plane.identity('admin').token } };
    writeFileSync(plugin, `#!/bin/sh\necho '${JSON.stringify(credential)}'\n`);
    chmodSync(plugin, 0o755);
    const path = join(dir, 'exec-kubeconfig');
    writeFileSync(path, stringify({
      apiVersion: 'v1', kind: 'Config', 'current-context': 'c',
      contexts: [{ name: 'c', context: { cluster: 'envtest', user: 'exec-user' } }],
      clusters: [{ name: 'envtest', cluster: { server: plane.url, 'certificate-authority-data': Buffer.from(plane.caPem).toString('base64') } }],
      users: [{ name: 'exec-user', user: { exec: { apiVersion: 'client.authentication.k8s.io/v1', command: plugin, interactiveMode: 'Never' } } }],
    }));
    const { connection, source } = await loadConnection(path, {});
    expect(source).toEqual({ kind: 'file', path, reader: 'client-node', feature: 'user exec' });
    await expect(defaultNamespaceVia(connection)).resolves.toMatchObject({ metadata: { name: 'default' } });
  });

  it('says what is missing: no such file, not in a cluster', async () => {
    await expect(loadConnection(join(dir, 'absent'), {})).rejects.toThrow(`--kubeconfig ${join(dir, 'absent')}: no such file`);
    await expect(loadConnection(undefined, {})).rejects.toThrow('not running in a cluster (KUBERNETES_SERVICE_HOST/KUBERNETES_SERVICE_PORT unset): pass --kubeconfig or set ESO_MTLS_KUBECONFIG');
  });
});
