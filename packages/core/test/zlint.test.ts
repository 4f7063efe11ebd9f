import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { execFileSync, spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { type Issued, KEY_ALGORITHMS, type KeyAlgorithm, issueCa, issueClientLeaf, issueServerLeaf, resolvePolicy } from '@eso-mtls/core';
import { nodeBackend, tempDir } from './support/fixtures.js';

// zlint, a linter we did not write, runs every lint of every source except the web-PKI ones,
// which testing/zlint/exclusions.json lists with their reasons. No error, warning or fatal result
// is accepted. zlint is found (and built once, cached by version) by scripts/ensure-zlint.sh,
// which `npm test` runs through scripts/prepare-test-env.sh; a missing zlint fails, never skips.
const repoRoot = fileURLToPath(new URL('../../../', import.meta.url));
const crypto = nodeBackend();
const tmp = tempDir('zlint');
afterAll(() => tmp.remove());

interface Exclusions {
  readonly sources: readonly { readonly source: string; readonly reason: string }[];
  readonly lints: readonly { readonly name: string; readonly reason: string }[];
}
const exclusions = JSON.parse(readFileSync(`${repoRoot}testing/zlint/exclusions.json`, 'utf8')) as Exclusions;

/** Sources that must run whatever the exclusions file says: the RFCs and zlint's community lints. */
const REQUIRED_SOURCES = ['RFC5280', 'RFC5480', 'RFC8813', 'RFC5891', 'Community'];
/** Results zlint may report; anything from warn up fails the test. */
const FAILING = new Set(['warn', 'error', 'fatal']);
/** Cluster domains: the default, and a custom multi-label one that reaches the SANs and the SPIFFE ID. */
const CLUSTER_DOMAINS = ['cluster.local', 'k8s.eu-west-1.corp.example'];

let zlintBinary: string | undefined;

/** The zlint binary from scripts/ensure-zlint.sh; throws what the script said if it could not provide one. */
function zlintPath(): string {
  if (zlintBinary !== undefined) return zlintBinary;
  try {
    const out = execFileSync('bash', ['scripts/ensure-zlint.sh'], { cwd: repoRoot, encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] });
    zlintBinary = out.trim().split('\n').pop()!;
  } catch (e) {
    const err = e as { stderr?: string; message: string };
    throw new Error(
      `zlint is required for the X.509 lint tests and scripts/ensure-zlint.sh could not provide it (run it by hand, or set ZLINT to a zlint binary): ${err.stderr || err.message}`,
      { cause: e },
    );
  }
  return zlintBinary;
}

function runZlint(args: readonly string[]): string {
  const r = spawnSync(zlintPath(), args, { encoding: 'utf8', maxBuffer: 16 << 20, timeout: 120_000 });
  if (r.error) throw r.error;
  if (r.status !== 0) throw new Error(`zlint ${args.join(' ')} exited with ${r.status}: ${r.stderr}`);
  return r.stdout;
}

/** zlint's verdicts on one PEM certificate, all lints but the excluded ones: lint name → result. */
function lint(name: string, issued: Issued): Record<string, { result: string; details?: string }> {
  const file = tmp.write(`${name}.pem`, issued.certificate.pem);
  const args = ['-excludeSources', exclusions.sources.map((s) => s.source).join(',')];
  if (exclusions.lints.length > 0) args.push('-excludeNames', exclusions.lints.map((l) => l.name).join(','));
  return JSON.parse(runZlint([...args, file])) as Record<string, { result: string; details?: string }>;
}

/** The results that fail: warnings, errors and fatals, with zlint's details. */
const failures = (results: ReturnType<typeof lint>): Record<string, string> =>
  Object.fromEntries(
    Object.entries(results)
      .filter(([, r]) => FAILING.has(r.result))
      .map(([name, r]) => [name, `${r.result}: ${r.details ?? ''}`]),
  );

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
