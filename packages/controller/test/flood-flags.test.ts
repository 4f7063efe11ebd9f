import { describe, expect, it } from '@jest/globals';
import { parseControllerConfig } from '../src/index.js';

const limits = (argv: string[], env: Record<string, string> = {}) => {
  const r = parseControllerConfig(argv, env);
  if (r.kind !== 'config') throw new Error(r.kind === 'error' ? r.error.message : r.kind);
  return { issuances: r.config.maxIssuancesPerReconcile, namespaces: r.config.maxNamespaces };
};

describe('--max-issuances-per-reconcile and --max-namespaces', () => {
  it('bound issuances at 1000 and serve every namespace by default; 0 lifts either; the variables set them too', () => {
    expect(limits([])).toEqual({ issuances: 1000, namespaces: undefined });
    expect(limits(['--max-issuances-per-reconcile=0', '--max-namespaces=0'])).toEqual({ issuances: undefined, namespaces: undefined });
    expect(limits(['--max-issuances-per-reconcile', '250', '--max-namespaces=5000'])).toEqual({ issuances: 250, namespaces: 5000 });
    expect(limits([], { ESO_MTLS_MAX_ISSUANCES_PER_RECONCILE: '1', ESO_MTLS_MAX_NAMESPACES: '1000000' })).toEqual({ issuances: 1, namespaces: 1_000_000 });
  });

  it.each([
    [
      ['--max-issuances-per-reconcile=-1'],
      'invalid value "-1" for --max-issuances-per-reconcile (env ESO_MTLS_MAX_ISSUANCES_PER_RECONCILE): accepts a whole number',
    ],
    [['--max-issuances-per-reconcile=1e3'], '"1e3" for --max-issuances-per-reconcile'],
    [
      ['--max-namespaces=1000001'],
      'invalid value "1000001" for --max-namespaces (env ESO_MTLS_MAX_NAMESPACES): accepts a whole number from 1 to 1000000, or 0 for no cap',
    ],
    [['--max-namespaces=ten'], '"ten" for --max-namespaces'],
  ])('refuses %j', (argv, expected) => {
    const r = parseControllerConfig(argv, {});
    expect(r.kind === 'error' ? r.error.message : r.kind).toContain(expected);
  });
});
