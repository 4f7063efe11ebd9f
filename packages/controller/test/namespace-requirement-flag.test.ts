import { describe, expect, it } from '@jest/globals';
import { parseControllerConfig } from '../src/index.js';

const requirement = (argv: string[], env: Record<string, string> = {}) => {
  const r = parseControllerConfig(argv, env);
  if (r.kind !== 'config') throw new Error(r.kind === 'error' ? r.error.message : r.kind);
  return r.config.namespaceRequirement;
};

describe('--require-namespace-label', () => {
  it('is off by default (also when set empty); key=value turns it on, from the flag or its variable', () => {
    expect(requirement([])).toBeUndefined();
    expect(requirement(['--require-namespace-label='])).toBeUndefined();
    expect(requirement(['--require-namespace-label=eso-mtls.io/providers-allowed=true'])).toEqual({ key: 'eso-mtls.io/providers-allowed', value: 'true' });
    expect(requirement([], { ESO_MTLS_REQUIRE_NAMESPACE_LABEL: 'tier=platform' })).toEqual({ key: 'tier', value: 'platform' });
  });

  it.each([['eso-mtls.io/providers-allowed'], ['a=b,c=d'], ['=true'], ['Bad_Prefix.io/x=true']])('refuses %j, saying what it accepts', (value) => {
    const r = parseControllerConfig([`--require-namespace-label=${value}`], {});
    expect(r.kind === 'error' ? r.error.message : r.kind).toContain(
      `invalid value ${JSON.stringify(value)} for --require-namespace-label (env ESO_MTLS_REQUIRE_NAMESPACE_LABEL): accepts a label key=value`,
    );
  });
});
