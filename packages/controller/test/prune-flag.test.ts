import { describe, expect, it } from '@jest/globals';
import { parseControllerConfig } from '../src/index.js';

const HOUR = 3_600_000;

describe('--prune-orphaned-secrets-after', () => {
  it('is off by default, and takes 0 or a duration of at least an hour, from the flag or its variable', () => {
    const grace = (argv: string[], env: Record<string, string> = {}) => {
      const r = parseControllerConfig(argv, env);
      if (r.kind !== 'config') throw new Error(r.kind === 'error' ? r.error.message : r.kind);
      return r.config.pruneOrphanedSecretsAfter;
    };
    expect(grace([])).toBe(0);
    expect(grace(['--prune-orphaned-secrets-after=24h'])).toBe(24 * HOUR);
    expect(grace(['--prune-orphaned-secrets-after=0'])).toBe(0);
    expect(grace([], { ESO_MTLS_PRUNE_ORPHANED_SECRETS_AFTER: '1h' })).toBe(HOUR);
    expect(grace(['--modes=secret,pod-certificate', '--prune-orphaned-secrets-after=48h'])).toBe(48 * HOUR);
  });

  it.each([
    [
      ['--prune-orphaned-secrets-after=59m'],
      'invalid value "59m" for --prune-orphaned-secrets-after (env ESO_MTLS_PRUNE_ORPHANED_SECRETS_AFTER): accepts 0 (off), or a duration',
    ],
    [['--prune-orphaned-secrets-after=forever'], '"forever" for --prune-orphaned-secrets-after'],
    [
      ['--modes=pod-certificate', '--prune-orphaned-secrets-after=24h'],
      'needs --modes to include secret: pod-certificate-only mode never reads provider Secrets',
    ],
  ])('refuses %j', (argv, expected) => {
    const r = parseControllerConfig(argv, {});
    expect(r.kind === 'error' ? r.error.message : r.kind).toContain(expected);
  });
});
