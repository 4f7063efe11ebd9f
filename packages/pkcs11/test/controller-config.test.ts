import { describe, expect, test } from '@jest/globals';
import { type ControllerConfig, parseControllerConfig } from '@eso-mtls/controller';

const config = (argv: string[], env: Record<string, string> = {}): ControllerConfig => {
  const r = parseControllerConfig(argv, env);
  if (r.kind !== 'config') throw new Error(r.kind === 'error' ? r.error.message : 'help');
  return r.config;
};
const error = (argv: string[], env: Record<string, string> = {}): string => {
  const r = parseControllerConfig(argv, env);
  return r.kind === 'error' ? r.error.message : `no error: ${r.kind}`;
};

describe('the controller flags of the HSM mode', () => {
  test('unset: the CA key stays in the CA Secret, and nothing of @eso-mtls/pkcs11 is configured', () => {
    expect(config([]).pkcs11).toBeUndefined();
  });

  test('the module, token and a PIN file, with the defaults', () => {
    expect(config(['--hsm-module', '/usr/lib/softhsm/libsofthsm2.so', '--hsm-token-label', 'eso', '--hsm-pin-file', '/run/pin']).pkcs11).toEqual({
      modulePath: '/usr/lib/softhsm/libsofthsm2.so',
      tokenLabel: 'eso',
      keyLabelPrefix: 'eso-mtls-ca-',
      pin: { file: '/run/pin' },
      keepRetiredKeys: false,
    });
  });

  test('everything from the environment, the PIN included, which is never kept in the configuration', () => {
    const c = config([], {
      ESO_MTLS_HSM_MODULE: '/opt/hsm.so',
      ESO_MTLS_HSM_TOKEN_LABEL: 'prod',
      ESO_MTLS_HSM_KEY_LABEL_PREFIX: 'cluster-a-',
      ESO_MTLS_HSM_KEEP_RETIRED_KEYS: 'true',
      ESO_MTLS_HSM_PIN: 's3cret',
    });
    expect(c.pkcs11).toEqual({
      modulePath: '/opt/hsm.so',
      tokenLabel: 'prod',
      keyLabelPrefix: 'cluster-a-',
      pin: { env: 'ESO_MTLS_HSM_PIN' },
      keepRetiredKeys: true,
    });
    expect(JSON.stringify(c)).not.toContain('s3cret');
  });

  test('incomplete or ambiguous settings are refused with the flag to fix', () => {
    expect(error(['--hsm-token-label', 'eso'])).toBe('--hsm-token-label (env ESO_MTLS_HSM_TOKEN_LABEL) is set but --hsm-module is not: set both, or neither');
    expect(error([], { ESO_MTLS_HSM_PIN: '1234' })).toBe('ESO_MTLS_HSM_PIN is set but --hsm-module is not: set both, or neither');
    expect(error(['--hsm-module', '/m.so', '--hsm-pin-file', '/p'])).toContain('--hsm-module needs --hsm-token-label');
    expect(error(['--hsm-module', '/m.so', '--hsm-token-label', 'eso'])).toContain('exactly one of --hsm-pin-file');
    expect(error(['--hsm-module', '/m.so', '--hsm-token-label', 'eso', '--hsm-pin-file', '/p'], { ESO_MTLS_HSM_PIN: '1' })).toContain('exactly one of');
    expect(error(['--hsm-module', '/m.so', '--hsm-token-label', 'x'.repeat(33), '--hsm-pin-file', '/p'])).toContain('--hsm-token-label');
  });

  test('there is no flag for the PIN itself', () => {
    expect(error(['--hsm-pin', '1234'])).toContain('unknown flag --hsm-pin');
  });
});
