import { describe, expect, it } from '@jest/globals';
import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { dirname, resolve } from 'node:path';
import { PROVIDER_SECRET_NAME } from '@eso-mtls/core';
import { repoRoot } from '@eso-mtls/test-kit/repo';
import { converge, startAdapter } from '@eso-mtls/test-kit/adapter';
import { useControlPlane } from '@eso-mtls/test-kit/installations';

// The uninstall cleanup of docs/operations.md, run as written with a real kubectl against a real
// apiserver: it deletes this installation's Secrets and nothing else.
const suite = useControlPlane();
const ESO = 'external-secrets-system';

/** The first ```sh block under the heading `## Cleaning up after an uninstall`. */
function cleanupScript(): string {
  const doc = readFileSync(resolve(repoRoot, 'docs/operations.md'), 'utf8');
  const section = doc.slice(doc.indexOf('## Cleaning up after an uninstall'));
  const block = /```sh\n([\s\S]*?)```/.exec(section);
  if (!block) throw new Error('docs/operations.md: no sh block under "## Cleaning up after an uninstall"');
  return block[1]!;
}

const names = async (namespace: string): Promise<string[]> =>
  (await suite.cluster.core.listNamespacedSecret({ namespace })).items.map((s) => s.metadata!.name!).sort();

describe('the documented uninstall cleanup', () => {
  it("deletes this installation's provider and client Secrets only: not the CA, not another installation's, not a tenant's", async () => {
    const ours = await suite.cluster.namespace('cleanup-ours');
    const other = await suite.cluster.namespace('cleanup-other');
    const tenant = await suite.cluster.namespace('cleanup-tenant');
    await suite.cluster.namespace(ESO);
    await suite.cluster.namespace('eso-other');
    // This installation (the defaults) serves `ours`; then another one, in eso-other, serves `other`.
    await suite.cluster.labelledService(ours, 'p');
    const run = await startAdapter(suite.plane.adminKubeConfig, ESO);
    await converge(run.adapter);
    await run.adapter.stop();
    await suite.cluster.deleteService(ours, 'p');
    await suite.cluster.labelledService(other, 'p');
    const second = await startAdapter(suite.plane.adminKubeConfig, 'eso-other');
    await converge(second.adapter);
    await second.adapter.stop();
    // A tenant's Secret of that name, with our labels copied but no installation annotation.
    await suite.cluster.core.createNamespacedSecret({
      namespace: tenant,
      body: {
        metadata: { name: PROVIDER_SECRET_NAME, labels: { 'app.kubernetes.io/managed-by': 'eso-mtls', 'app.kubernetes.io/component': 'provider-tls' } },
        type: 'kubernetes.io/tls',
        stringData: { 'tls.crt': 'x', 'tls.key': 'y' },
      },
    });
    await suite.cluster.core.createNamespacedSecret({ namespace: ESO, body: { metadata: { name: 'eso-core-credentials' }, stringData: { k: 'v' } } });
    expect(await suite.cluster.secret(ours)).toBeDefined();
    expect(await suite.cluster.secret(other)).toBeDefined();

    const kubectl = execFileSync('bash', [resolve(repoRoot, 'scripts/ensure-kubectl.sh')], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'inherit'] }).trim();
    execFileSync('bash', ['-euo', 'pipefail', '-c', cleanupScript()], {
      env: { ...process.env, KUBECONFIG: suite.plane.adminKubeconfigPath, PATH: `${dirname(kubectl)}:${process.env.PATH ?? ''}` },
      stdio: ['ignore', 'pipe', 'pipe'],
    });

    expect(await suite.cluster.secret(ours)).toBeUndefined();
    expect(await suite.cluster.secret(other)).toBeDefined();
    expect(await suite.cluster.secret(tenant)).toBeDefined();
    expect(await names(ESO)).toEqual(['eso-core-credentials', 'eso-provider-ca-internal']);
    expect(await names('eso-other')).toEqual(['eso-provider-ca-internal', 'eso-provider-client-tls']);
  });
});
