// The controller's own entry with --ca-from-secret and --ca-trust-anchors, against a real
// kube-apiserver: the flags reach the adapter, and every leaf it writes is the user's intermediate's
// (the leaf, then the intermediate; ca.crt the root alone), as chaining-to-your-pki.md says.
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { CoreV1Api, type KubeConfig } from '@kubernetes/client-node';
import { splitPemCertificates } from '@eso-mtls/core';
import { type ControlPlane, startControlPlane } from '../../../testing/envtest/src/index.js';
import { ESO_NS, PROVIDER_SECRET, createProviderNamespace } from '@eso-mtls/test-kit/cluster';
import { ControllerProcess } from '@eso-mtls/test-kit/controller-process';
import { eventually } from '@eso-mtls/test-kit/eventually';
import { opensslP256Ca } from '@eso-mtls/test-kit/pod-certificates';
import { opensslIntermediate } from '@eso-mtls/test-kit/upstream-pki';

const b64 = (s: string): string => Buffer.from(s).toString('base64');

describe('the controller entry with a CA from a Secret', () => {
  let plane: ControlPlane;
  let admin: KubeConfig;
  let controller: ControllerProcess | undefined;

  beforeAll(async () => {
    plane = await startControlPlane();
    admin = plane.adminKubeConfig;
  }, 120_000);
  afterAll(async () => {
    await controller?.kill();
    await plane?.stop();
  });

  it('signs every leaf with the intermediate of --ca-from-secret, chained to the roots of --ca-trust-anchors', async () => {
    const core = admin.makeApiClient(CoreV1Api);
    await core.createNamespace({ body: { metadata: { name: ESO_NS } } });
    const root = await opensslP256Ca('eso-mtls entry test root');
    const intermediate = opensslIntermediate(root, 'eso-mtls entry test intermediate');
    await core.createNamespacedSecret({ namespace: ESO_NS, body: { metadata: { name: 'org-roots' }, data: { 'ca.crt': b64(root.cert) } } });
    await core.createNamespacedSecret({
      namespace: ESO_NS,
      body: { metadata: { name: 'org-intermediate' }, data: { 'tls.crt': b64(intermediate.cert), 'tls.key': b64(intermediate.key) } },
    });
    await createProviderNamespace(admin, 'entry-a', ['provider']);
    const kubeconfig = join(plane.dir, 'kubeconfig-ca-source.yaml');
    writeFileSync(kubeconfig, admin.exportConfig(), { mode: 0o600 });
    controller = new ControllerProcess('ca-source', [
      '--kubeconfig',
      kubeconfig,
      '--ca-from-secret=org-intermediate',
      '--ca-trust-anchors=Secret/org-roots',
      '--health-probe-bind-address=127.0.0.1:0',
      '--metrics-bind-address=127.0.0.1:0',
    ]);
    const provider = await eventually(
      async () => {
        const s = await core.readNamespacedSecret({ namespace: 'entry-a', name: PROVIDER_SECRET }).catch(() => undefined);
        return s?.data?.['tls.crt'] ? s : false;
      },
      120_000,
      'the provider Secret',
    );
    const chain = splitPemCertificates(Buffer.from(provider.data!['tls.crt']!, 'base64').toString());
    expect(chain.slice(1)).toEqual(splitPemCertificates(intermediate.cert));
    expect(Buffer.from(provider.data!['ca.crt']!, 'base64').toString()).toBe(root.cert);
  }, 240_000);
});
