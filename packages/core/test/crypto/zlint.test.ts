import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { type Issued, KEY_ALGORITHMS, type KeyAlgorithm, issueCa, issueClientLeaf, issueServerLeaf, resolvePolicy } from '@eso-mtls/core';
import { nodeBackend, tempDir } from '../support/fixtures.js';
import { exclusions, failures, lintPem, runZlint, zlintPath } from '../support/zlint.js';

// zlint, a linter we did not write, runs every lint of every source except the web-PKI ones,
// which testing/zlint/exclusions.json lists with their reasons. No error, warning or fatal result
// is accepted. zlint is found (and built once, cached by version) by scripts/ensure-zlint.sh,
// which `npm test` runs through scripts/prepare-test-env.sh; a missing zlint fails, never skips
// (support/zlint.ts).
const repoRoot = fileURLToPath(new URL('../../../../', import.meta.url));
const crypto = nodeBackend();
const tmp = tempDir('zlint');
afterAll(() => tmp.remove());

/** Sources that must run whatever the exclusions file says: the RFCs and zlint's community lints. */
const REQUIRED_SOURCES = ['RFC5280', 'RFC5480', 'RFC8813', 'RFC5891', 'Community'];
/** Cluster domains: the default, and a custom multi-label one that reaches the SANs and the SPIFFE ID. */
const CLUSTER_DOMAINS = ['cluster.local', 'k8s.eu-west-1.corp.example'];

/** zlint's verdicts on one issued certificate, all lints but the excluded ones: lint name → result. */
const lint = (name: string, issued: Issued): ReturnType<typeof lintPem> => lintPem(tmp.write(`${name}.pem`, issued.certificate.pem));

let registry: Map<string, string> | undefined;

/** lint name → source, from zlint's own registry. */
function lintSources(): Map<string, string> {
  if (registry !== undefined) return registry;
  const lines = runZlint(['-list-lints-json'])
    .split('\n')
    .filter((l) => l.trim() !== '');
  registry = new Map(lines.map((l) => JSON.parse(l) as { name: string; source: string }).map((l) => [l.name, l.source]));
  return registry;
}

// Normally prepare-test-env.sh has built zlint already; a cold build from the Go module proxy took
// 90 s on a loaded 2-core machine, so finding it may take that long here (a build's bound, not a speed check).
beforeAll(() => {
  zlintPath();
}, 20 * 60_000);

describe('the exclusions file', () => {
  it('names only sources and lints zlint knows, each with a reason, and never an RFC or community source', () => {
    const known = lintSources();
    const knownSources = new Set(known.values());
    for (const { source, reason } of exclusions.sources) {
      expect({ source, known: knownSources.has(source), reason: reason.length > 20 }).toEqual({ source, known: true, reason: true });
    }
    for (const { name, reason } of exclusions.lints) {
      expect({ name, known: known.has(name), reason: reason.length > 20 }).toEqual({ name, known: true, reason: true });
    }
    const excluded = new Set([...exclusions.sources.map((s) => s.source), ...exclusions.lints.map((l) => known.get(l.name))]);
    expect(REQUIRED_SOURCES.filter((s) => excluded.has(s))).toEqual([]);
  });

  it('is mirrored in docs/x509.md, one table row per exclusion', () => {
    const doc = readFileSync(`${repoRoot}docs/x509.md`, 'utf8');
    const rows = [...exclusions.sources.map((s) => s.source), ...exclusions.lints.map((l) => l.name)];
    expect(rows.filter((name) => !doc.includes(`| \`${name}\` |`))).toEqual([]);
  });
});

describe.each(KEY_ALGORITHMS.flatMap((a) => CLUSTER_DOMAINS.map((d) => [a, d] as [KeyAlgorithm, string])))(
  '%s, cluster domain %s',
  (keyAlgorithm, clusterDomain) => {
    const ctx = () => ({ crypto, policy: resolvePolicy({ keyAlgorithm, clusterDomain }), now: Date.now() });
    const names = ['provider', 'provider.team-a', 'provider.team-a.svc', `provider.team-a.svc.${clusterDomain}`];
    const certificates: Record<'ca' | 'server leaf' | 'client leaf', Issued> = {} as never;
    beforeAll(async () => {
      certificates.ca = await issueCa(ctx());
      [certificates['server leaf'], certificates['client leaf']] = await Promise.all([
        issueServerLeaf(ctx(), certificates.ca, names),
        issueClientLeaf(ctx(), certificates.ca),
      ]);
    });

    it.each(['ca', 'server leaf', 'client leaf'] as const)('the %s has no zlint error, warning or fatal', (kind) => {
      const results = lint(`${keyAlgorithm}-${clusterDomain}-${kind.replace(' ', '-')}`, certificates[kind]);
      expect(failures(results)).toEqual({});
      // The lints that must run did run: each required source gave at least one verdict.
      const sources = lintSources();
      const ran = new Set(Object.keys(results).map((name) => sources.get(name)));
      expect(REQUIRED_SOURCES.filter((s) => !ran.has(s))).toEqual([]);
    });
  },
);
