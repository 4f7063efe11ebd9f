import { afterAll, describe, expect, it } from '@jest/globals';
import { basename, dirname } from 'node:path';
import type { V1Deployment } from '@kubernetes/client-node';
import { find } from '@eso-mtls/test-kit/manifests';
import { Helm, type Values, chartDir } from '@eso-mtls/test-kit/helm';
import { expectRefusals } from './support/refusals.js';
import { containerOf, flagsOf } from './support/pod-certificates.js';
import { parsedControllerConfig } from './support/release.js';

// The chart's hsm values (docs/hsm.md): the --hsm-* flags, the PIN Secret mounted as a file and
// named by --hsm-pin-file, the image that can load a module, extra volumes for the module; nothing
// of it while hsm.enabled is false, and a clear failure when a required value is missing.
const helm = new Helm();
afterAll(() => helm.remove());

const NAME = 'eso-mtls-controller';
const NAMESPACE = 'external-secrets';
const render = (values: Values) =>
  find<V1Deployment>(helm.template(chartDir, 'eso-mtls', NAMESPACE, { fullnameOverride: NAME, ...values }), 'Deployment', NAME);

/** Every hsm value set, none at its default. */
const HSM = {
  enabled: true,
  modulePath: '/opt/hsm/libvendor-pkcs11.so',
  tokenLabel: 'eso #1: mtls CA', // a label may hold what YAML would misread unquoted
  keyLabelPrefix: 'cluster-a:ca-',
  keepRetiredKeys: true,
  pinSecret: { name: 'eso-mtls-hsm-pin', key: 'user-pin' },
  image: { repository: 'registry.example/eso-mtls/controller-hsm', tag: '0.1.0-hsm' },
  volumes: [{ name: 'hsm-client', configMap: { name: 'vendor-client-config' } }],
  volumeMounts: [{ name: 'hsm-client', mountPath: '/etc/vendor', readOnly: true }],
};

const podOf = (deployment: V1Deployment) => deployment.spec!.template.spec!;

describe('hsm in the chart', () => {
  it('renders nothing of the HSM mode while hsm.enabled is false, whatever the other hsm values say', () => {
    const plain = render({});
    const pod = podOf(plain);
    expect(Object.keys(flagsOf(containerOf(plain, 'controller').args ?? [])).filter((f) => f.startsWith('hsm-'))).toEqual([]);
    expect([pod.volumes, containerOf(plain, 'controller').volumeMounts, pod.securityContext!.fsGroup]).toEqual([undefined, undefined, undefined]);
    expect(parsedControllerConfig(plain).pkcs11).toBeUndefined();
    expect(render({ hsm: { ...HSM, enabled: false } })).toEqual(plain);
  });

  it('passes every hsm value as its flag, and the controller parses them into its PKCS#11 configuration, the PIN from a file', () => {
    const deployment = render({ hsm: HSM });
    expect(parsedControllerConfig(deployment).pkcs11).toEqual({
      modulePath: HSM.modulePath,
      tokenLabel: HSM.tokenLabel,
      keyLabelPrefix: HSM.keyLabelPrefix,
      pin: { file: expect.stringMatching(/^\//) },
      keepRetiredKeys: true,
    });
    const container = containerOf(deployment, 'controller');
    // The PIN is never a flag value nor an environment variable: only the file's path is passed.
    expect((container.env ?? []).filter((e) => e.name.includes('HSM') || e.valueFrom?.secretKeyRef)).toEqual([]);
    const defaults = parsedControllerConfig(render({ hsm: { enabled: true, modulePath: HSM.modulePath, tokenLabel: 'eso', pinSecret: { name: 'pin' } } }));
    expect(defaults.pkcs11).toMatchObject({ keyLabelPrefix: 'eso-mtls-ca-', keepRetiredKeys: false });
  });

  it('mounts the PIN Secret key read-only as the file --hsm-pin-file names, readable by the controller group only', () => {
    const deployment = render({ hsm: HSM });
    const pinFile = (parsedControllerConfig(deployment).pkcs11!.pin as { file: string }).file;
    const container = containerOf(deployment, 'controller');
    const pod = podOf(deployment);
    const mount = container.volumeMounts!.find((m) => m.mountPath === dirname(pinFile))!;
    expect(mount).toEqual({ name: expect.any(String), mountPath: dirname(pinFile), readOnly: true });
    expect(pod.volumes!.find((v) => v.name === mount.name)).toEqual({
      name: mount.name,
      secret: { secretName: 'eso-mtls-hsm-pin', defaultMode: 0o440, items: [{ key: 'user-pin', path: basename(pinFile) }] },
    });
    // 0440 reaches the controller through the group: the pod's fsGroup is its own group.
    expect(pod.securityContext).toMatchObject({ runAsUser: 65532, runAsGroup: 65532, fsGroup: 65532 });
    expect(container.securityContext).toMatchObject({ readOnlyRootFilesystem: true, runAsNonRoot: true });
  });

  it("runs hsm.image instead of image, or image when hsm.image names no repository; hsm.volumes and volumeMounts follow the PIN's", () => {
    const deployment = render({ hsm: HSM, image: { pullPolicy: 'Always' } });
    const container = containerOf(deployment, 'controller');
    expect([container.image, container.imagePullPolicy]).toEqual(['registry.example/eso-mtls/controller-hsm:0.1.0-hsm', 'Always']);
    const digest = `sha256:${'ab'.repeat(32)}`;
    expect(containerOf(render({ hsm: { ...HSM, image: { repository: 'r.example/hsm', digest } } }), 'controller').image).toBe(`r.example/hsm@${digest}`);
    expect(containerOf(render({ hsm: { ...HSM, image: { repository: 'r.example/hsm' } } }), 'controller').image).toBe('r.example/hsm:0.1.0');
    const ownImage = render({ hsm: { ...HSM, image: { repository: '' } }, image: { repository: 'r.example/own-hsm-build', tag: '7' } });
    expect(containerOf(ownImage, 'controller').image).toBe('r.example/own-hsm-build:7');
    expect(podOf(deployment).volumes!.map((v) => v.name)).toEqual(['hsm-pin', 'hsm-client']);
    expect(podOf(deployment).volumes![1]).toEqual(HSM.volumes[0]);
    expect(container.volumeMounts!.map((m) => m.mountPath)).toEqual(['/var/run/secrets/eso-mtls/hsm', '/etc/vendor']);
    expect(container.volumeMounts![1]).toEqual(HSM.volumeMounts[0]);
  });

  it('refuses an enabled HSM without its module, token label or PIN Secret, and values the controller would refuse, naming each', () => {
    const required = { enabled: true, modulePath: '/opt/hsm/libsofthsm2.so', tokenLabel: 'eso', pinSecret: { name: 'pin' } };
    const refusals: [Values, string][] = [
      [{ hsm: { ...required, modulePath: '' } }, 'hsm.enabled needs hsm.modulePath (--hsm-module)'],
      [{ hsm: { ...required, tokenLabel: '' } }, 'hsm.enabled needs hsm.tokenLabel (--hsm-token-label)'],
      [
        { hsm: { ...required, pinSecret: { name: '' } } },
        `hsm.enabled needs hsm.pinSecret.name: an existing Secret holding the token's user PIN under hsm.pinSecret.key (the chart never renders it). Create one with: kubectl -n ${NAMESPACE} create secret generic eso-mtls-hsm-pin --from-file=pin=<pin file>`,
      ],
      [{ hsm: { enabled: true } }, 'hsm.enabled needs hsm.modulePath'],
      [
        { hsm: required, extraEnv: [{ name: 'ESO_MTLS_HSM_PIN', value: '1234' }] },
        'extraEnv sets ESO_MTLS_HSM_PIN, but with hsm.enabled the chart passes the PIN as a file (hsm.pinSecret, --hsm-pin-file)',
      ],
      [{ hsm: { ...required, tokenLabel: 'x'.repeat(33) } }, "at '/hsm/tokenLabel': maxLength: got 33, want 32"],
      [{ hsm: { ...required, keyLabelPrefix: 'eso ca' } }, "at '/hsm/keyLabelPrefix': 'eso ca' does not match pattern"],
      [{ hsm: { ...required, modulePath: 'libsofthsm2.so' } }, "at '/hsm/modulePath': 'libsofthsm2.so' does not match pattern"],
      [{ hsm: { ...required, pinSecret: { name: 'pin', key: 'a/b' } } }, "at '/hsm/pinSecret/key': 'a/b' does not match pattern"],
      [{ hsm: { ...required, image: { repository: 'r.example/hsm', pullPolicy: 'Always' } } }, "additional properties 'pullPolicy' not allowed"],
    ];
    expectRefusals(render, refusals);
  });
});
