import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { CoreV1Api, type KubeConfig } from '@kubernetes/client-node';
import { EMERGENCY_ROTATION, MAX_ROTATE_REQUEST_BYTES, ROTATE_ACKNOWLEDGED_ANNOTATION, ROTATE_ANNOTATION, acknowledgementOf } from '@eso-mtls/core';
import { type ControlPlane, startControlPlane } from '../../../testing/envtest/src/index.js';
import type { RunningController } from '../src/index.js';
import { renewToken } from '../src/status/renew-request.js';
import type { StatusReport } from '../src/status/report.js';
import { CA_SECRET, CLIENT_SECRET, ESO_NS, PROVIDER_SECRET, converged, createProviderNamespace, privateKeyForms } from '@eso-mtls/test-kit/cluster';
import { eventually } from '@eso-mtls/test-kit/eventually';
import { bindClusterRole, runCli, startTestController } from '@eso-mtls/test-kit/cli-run';
import { applyAll, kustomizeBuild, kustomizeInstall } from '@eso-mtls/test-kit/manifests';

// `eso-mtls renew` as a user bound only to the shipped eso-mtls-renew ClusterRole, against a real
// apiserver with the real controller running in-process: the annotation is set, and the controller
// rotates with reason forced.
const NAMESPACES = new Map([
  ['team-a', ['vault', 'aws']],
  ['team-b', ['gcp']],
]);

describe('eso-mtls renew', () => {
  let plane: ControlPlane;
  let admin: KubeConfig;
  let core: CoreV1Api;
  let controller: RunningController;
  let renewer: string;
  const outputs: string[] = [];
  const renew = async (argv: string[], kubeconfig = renewer) => {
    const run = await runCli('renew', ['--kubeconfig', kubeconfig, ...argv]);
    outputs.push(run.stdout, run.stderr);
    return run;
  };
  const serial = async (namespace: string, name: string): Promise<string> => {
    const secret = await core.readNamespacedSecret({ namespace, name });
    return secret.data?.['tls.crt'] ?? '';
  };
  const forcedRotations = async (namespace: string): Promise<number> => {
    const text = await controller.metrics.registry.metrics();
    const line = text
      .split('\n')
      .find((l) => l.startsWith('eso_provider_certificate_rotation_total{') && l.includes(`namespace="${namespace}"`) && l.includes('reason="forced"'));
    return line ? Number(line.split(' ').pop()) : 0;
  };

  beforeAll(async () => {
    plane = await startControlPlane({ identities: [{ name: 'renewer' }, { name: 'reader' }] });
    admin = plane.adminKubeConfig;
    core = admin.makeApiClient(CoreV1Api);
    await applyAll(admin, [...kustomizeInstall('deploy'), ...kustomizeBuild('deploy/cli-rbac')]);
    await bindClusterRole(admin, 'renewer', 'eso-mtls-renew');
    await bindClusterRole(admin, 'reader', 'eso-mtls-status');
    renewer = plane.identity('renewer').kubeconfigPath;
    for (const [ns, services] of NAMESPACES) await createProviderNamespace(admin, ns, services);
    controller = await startTestController(plane.adminKubeconfigPath);
    await eventually(() => converged(admin, NAMESPACES), 60_000, 'the controller to issue every certificate');
  }, 180_000);
  afterAll(async () => {
    await controller?.stop();
    await plane?.stop();
  });

  it('renews a namespace: every labelled Service is annotated and the controller re-issues once, reason forced', async () => {
    const before = await serial('team-a', PROVIDER_SECRET);
    const other = await serial('team-b', PROVIDER_SECRET);
    await eventually(async () => (await renew(['--namespace', 'team-a'])).code === 0, 20_000, 'the binding to take effect');
    const last = outputs[outputs.length - 2]!;
    expect(last).toMatch(/^Service team-a\/aws annotated eso-mtls\.io\/rotate=\S+\nService team-a\/vault annotated/);
    const services = await core.listNamespacedService({ namespace: 'team-a' });
    const tokens = new Set(services.items.map((s) => s.metadata?.annotations?.[ROTATE_ANNOTATION]));
    expect(tokens.size).toBe(1);
    const token = [...tokens][0]!;
    await eventually(async () => (await serial('team-a', PROVIDER_SECRET)) !== before, 30_000, 'the certificate of team-a to be re-issued');
    const reissued = await serial('team-a', PROVIDER_SECRET);
    // The controller may act between renew's two patches (aws first): then it acknowledged aws alone,
    // and vault's same token asks nothing again.
    const secret = await core.readNamespacedSecret({ namespace: 'team-a', name: PROVIDER_SECRET });
    const acknowledged = JSON.parse(secret.metadata!.annotations![ROTATE_ACKNOWLEDGED_ANNOTATION]!) as Record<string, string>;
    expect(acknowledged.aws).toBe(acknowledgementOf(token));
    expect(Object.values(acknowledged)).toEqual(Object.keys(acknowledged).map(() => acknowledgementOf(token)));
    expect(await serial('team-b', PROVIDER_SECRET)).toBe(other);

    // status, as the status role, agrees: healthy again, next rotation by expiry.
    const asReader = () => runCli('status', ['--kubeconfig', plane.identity('reader').kubeconfigPath, '-o', 'json', '-n', 'team-a']);
    await eventually(async () => (await asReader()).code === 0, 20_000, 'status to report team-a healthy');
    const status = JSON.parse((await asReader()).stdout) as StatusReport;
    expect(status.namespaces[0]!.nextRotation!.reason).toBe('expiring');
    // Once: both Services were annotated before renew returned, and by the time status has answered
    // the certificate is still the one re-issued, with one forced rotation counted.
    expect(await serial('team-a', PROVIDER_SECRET)).toBe(reissued);
    expect(await forcedRotations('team-a')).toBe(1);
  });

  it('renews the client certificate and starts an overlap CA rotation', async () => {
    const client = await serial(ESO_NS, CLIENT_SECRET);
    expect((await renew(['--client'])).code).toBe(0);
    await eventually(async () => (await serial(ESO_NS, CLIENT_SECRET)) !== client, 30_000, 'the client certificate to be re-issued');
    const clientSecret = await core.readNamespacedSecret({ namespace: ESO_NS, name: CLIENT_SECRET });
    expect(clientSecret.metadata!.annotations![ROTATE_ACKNOWLEDGED_ANNOTATION]).toBe(clientSecret.metadata!.annotations![ROTATE_ANNOTATION]);

    expect((await renew(['--ca'])).code).toBe(0);
    await eventually(
      async () => ((await core.readNamespacedSecret({ namespace: ESO_NS, name: CA_SECRET })).data?.['next.crt'] ?? '') !== '',
      30_000,
      'a next CA to be prepared',
    );
    const ca = await core.readNamespacedSecret({ namespace: ESO_NS, name: CA_SECRET });
    expect(ca.metadata!.annotations![ROTATE_ANNOTATION]).not.toContain(EMERGENCY_ROTATION);
    expect(ca.metadata!.annotations![ROTATE_ACKNOWLEDGED_ANNOTATION]).toBe(ca.metadata!.annotations![ROTATE_ANNOTATION]);
  });

  it('asks for an emergency CA rotation: a new active CA at once', async () => {
    const active = async () => (await core.readNamespacedSecret({ namespace: ESO_NS, name: CA_SECRET })).data?.['ca.crt'] ?? '';
    const before = await active();
    const run = await renew(['--ca', '--emergency']);
    expect(run.code).toBe(0);
    expect(run.stdout).toMatch(/annotated eso-mtls\.io\/rotate=emergency:\S+/);
    await eventually(async () => (await active()) !== before, 30_000, 'a new active CA');
  });

  it('refuses what it cannot do, with documented exit codes', async () => {
    expect((await renew([])).code).toBe(2);
    expect((await renew(['--client', '--ca'])).code).toBe(2);
    const emergency = await renew(['--client', '--emergency']);
    expect(emergency.code).toBe(2);
    expect(emergency.stderr).toContain('--emergency goes with --ca only');
    await core.createNamespace({ body: { metadata: { name: 'empty' } } });
    const nothing = await renew(['--namespace', 'empty']);
    expect(nothing.code).toBe(1);
    expect(nothing.stderr).toContain('namespace empty has no Service labelled external-secrets.io/provider=true');
    // The status role may not patch: 403, named with the role to bind.
    const denied = await renew(['--client'], plane.identity('reader').kubeconfigPath);
    expect(denied.code).toBe(3);
    expect(denied.stderr).toContain('it needs ClusterRole eso-mtls-renew');
  });

  it('makes tokens that are fresh, bounded, and keep the emergency prefix', () => {
    const a = renewToken(0, false);
    const b = renewToken(0, false);
    expect(a).not.toBe(b);
    expect(a).toMatch(/^1970-01-01T00:00:00\.000Z-[0-9a-f]{8}$/);
    const e = renewToken(Date.now(), true);
    expect(e.startsWith(`${EMERGENCY_ROTATION}:`)).toBe(true);
    expect(Buffer.byteLength(e)).toBeLessThanOrEqual(MAX_ROTATE_REQUEST_BYTES);
  });

  it('never prints a private key', async () => {
    const forms = await privateKeyForms(admin);
    const all = outputs.join('\n');
    expect(all).not.toContain('PRIVATE KEY');
    for (const form of forms) expect(all).not.toContain(form);
  });
});
