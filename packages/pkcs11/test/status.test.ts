// `eso-mtls status` of a CA whose key is in a SoftHSM2 token, made by the real controller with
// --hsm-module. Status has no token by default: it says the key is kept there and not checked, and
// is healthy (exit 0), where it used to call ca.key-ref garbage and exit 1. Given the controller's
// --hsm-* settings it asks the token; given a wrong PIN it names the token it could not ask (exit 1).
// Scale: one provider namespace, one token, four status runs.
import { afterEach, beforeEach, describe, expect, it } from '@jest/globals';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { createLogger, parseControllerConfig, startController } from '@eso-mtls/controller';
import type { StatusReport } from '../../controller/src/status/report.js';
import { runCli } from '@eso-mtls/test-kit/cli-run';
import { eventually } from '@eso-mtls/test-kit/eventually';
import { text } from '@eso-mtls/test-kit/secrets';
import { useInstallations } from '@eso-mtls/test-kit/installations';
import { type TestToken, createTestToken } from './support/softhsm.js';

const CA_SECRET = 'eso-provider-ca-internal';
const suite = useInstallations();
let token: TestToken;
beforeEach(() => {
  token = createTestToken();
});
afterEach(() => token.remove());

describe('eso-mtls status with the CA key in a PKCS#11 token', () => {
  it('says the key is in the token and not checked without --hsm-*, checks it with them, and names a token it cannot ask', async () => {
    const eso = await suite.cluster.namespace('eso-hsm-status');
    await suite.cluster.namespace('hsm-status');
    await suite.cluster.labelledService('hsm-status', 'provider');
    suite.deleteAfterTest('hsm-status', 'provider');
    const pinFile = join(token.dir, 'pin');
    writeFileSync(pinFile, `${token.pin}\n`);
    const hsm = ['--hsm-module', token.modulePath, '--hsm-token-label', token.label];
    const parsed = parseControllerConfig(
      [
        ...['--kubeconfig', suite.plane.adminKubeconfigPath, '--namespace', eso, '--metrics-bind-address=0', '--health-probe-bind-address=0'],
        ...[...hsm, '--hsm-pin-file', pinFile],
      ],
      {},
    );
    if (parsed.kind !== 'config') throw new Error(`controller flags: ${JSON.stringify(parsed)}`);
    const controller = await startController(parsed.config, { logger: createLogger('silent'), identity: 'hsm-status-test' });
    try {
      await controller.synced;
      await eventually(async () => expect(text(await suite.cluster.secret('hsm-status'), 'tls.crt')).toContain('BEGIN CERTIFICATE'));
      await eventually(async () => expect(text(await suite.cluster.secret(eso, 'eso-provider-client-tls'), 'tls.crt')).toContain('BEGIN CERTIFICATE'));
    } finally {
      // One PKCS#11 login per process, as in production: the controller lets go of the token first.
      await controller.stop();
    }
    expect(Object.keys((await suite.cluster.secret(eso, CA_SECRET))!.data!).sort()).toEqual(['ca.crt', 'ca.key-ref']);
    const status = (argv: string[], env: Record<string, string> = {}) =>
      runCli('status', ['--kubeconfig', suite.plane.adminKubeconfigPath, '--eso-namespace', eso, ...argv], env);

    // No token given: the key is in the token, not checked, and that is no problem.
    const plain = await status([]);
    expect(plain.stdout).not.toContain('garbage_pem');
    expect(plain.stdout).toContain(
      "key      active CA (ca.key-ref): key in a PKCS#11 token, not checked: give status the controller's --hsm-module, --hsm-token-label and PIN to check it",
    );
    expect(plain.stdout).toContain('Summary: no problem (exit code 0)');
    expect(plain.code).toBe(0);
    const json = await status(['-o', 'json']);
    const report = JSON.parse(json.stdout) as StatusReport;
    expect(report.ca).toMatchObject({ checked: true, problems: [], keys: [{ slot: 'active', field: 'ca.key-ref', checked: false }] });
    expect(report.namespaces.map((n) => [n.namespace, n.signedByActiveCa, n.problems])).toEqual([['hsm-status', true, []]]);
    expect(report.summary).toEqual({ healthy: true, problems: 0, unchecked: 0, exitCode: 0 });

    // The controller's settings, from its flags and variables: the token is asked, and holds the key.
    for (const [argv, env] of [
      [[...hsm, '--hsm-pin-file', pinFile], {}],
      [['-o', 'text'], { ESO_MTLS_HSM_MODULE: token.modulePath, ESO_MTLS_HSM_TOKEN_LABEL: token.label, ESO_MTLS_HSM_PIN: token.pin }],
    ] as const) {
      const checked = await status([...argv], env);
      expect(checked.stdout).toContain(`key      active CA (ca.key-ref): the token ${token.label} holds the key of this CA`);
      expect(checked.code).toBe(0);
    }

    // A wrong PIN: the token could not be asked, a problem of its own (exit 1), and nothing else.
    const wrong = await status(['-o', 'json', ...hsm], { ESO_MTLS_HSM_PIN: '000000' });
    const refused = JSON.parse(wrong.stdout) as StatusReport;
    expect(wrong.code).toBe(1);
    expect(refused.ca.problems.map((p) => p.kind)).toEqual(['unreachable']);
    expect(refused.ca.problems[0]!.message).toContain(`the token ${token.label} could not be asked about the active CA's key (ca.key-ref)`);
    expect(refused.summary).toMatchObject({ problems: 1, exitCode: 1 });
  });
});
