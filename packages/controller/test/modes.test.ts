import { describe, expect, it } from '@jest/globals';
import { parseControllerConfig } from '../src/index.js';
import { operatingModes } from '../src/modes.js';

// The modes of the start-up line, from flags as `eso-mtls controller` parses them. The line itself
// is read from the running process in namespaces-not-served.test.ts.
const modesOf = (argv: string[], env: Record<string, string> = {}) => {
  const r = parseControllerConfig(argv, env);
  if (r.kind !== 'config') throw new Error(r.kind === 'error' ? r.error.message : r.kind);
  return operatingModes(r.config);
};

describe('the operating modes of the start-up line', () => {
  it('by default: Secret mode, the CA key in its Secret, no requirement, cap or pruning, the default issuance bound', () => {
    expect(modesOf([])).toEqual({
      modes: 'secret',
      caKeys: 'ca-secret',
      requireNamespaceLabel: 'off',
      maxNamespaces: 'off',
      maxIssuancesPerReconcile: 1000,
      pruneOrphanedSecretsAfter: 'off',
    });
  });

  it('with every mode on: both modes and their signers, the HSM token, the requirement, the cap, pruning, no issuance bound', () => {
    expect(
      modesOf(
        [
          '--modes=secret,pod-certificate',
          '--hsm-module=/usr/lib/softhsm/libsofthsm2.so',
          '--hsm-token-label=eso-ca',
          '--require-namespace-label=eso-mtls.io/providers-allowed=true',
          '--max-namespaces=50',
          '--max-issuances-per-reconcile=0',
          '--prune-orphaned-secrets-after=36h',
        ],
        { ESO_MTLS_HSM_PIN: '1234' },
      ),
    ).toEqual({
      modes: 'secret,pod-certificate',
      podCertificateSigners: 'eso-mtls.io/provider-server,eso-mtls.io/eso-client',
      caKeys: 'hsm',
      hsmToken: 'eso-ca',
      requireNamespaceLabel: 'eso-mtls.io/providers-allowed=true',
      maxNamespaces: 50,
      maxIssuancesPerReconcile: 'off',
      pruneOrphanedSecretsAfter: '36h',
    });
  });

  it('pod certificates only', () => {
    expect(modesOf(['--modes=pod-certificate'])).toMatchObject({ modes: 'pod-certificate', podCertificateSigners: expect.any(String) });
  });
});
