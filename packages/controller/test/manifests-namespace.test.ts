import { describe, expect, it } from '@jest/globals';
import { readFileSync, readdirSync } from 'node:fs';
import { join, relative } from 'node:path';
import { parse } from 'yaml';
import { DEFAULT_POLICY } from '@eso-mtls/core';
import { kustomizeBuild } from '@eso-mtls/test-kit/manifests';
import { repoRoot } from '@eso-mtls/test-kit/repo';

// `kubectl delete -k <build>` deletes every object the build renders. A build that rendered ESO's
// Namespace would delete it, and with it the CA Secret and ESO's client Secret the controller wrote
// there (issue 23 item 3). Only deploy/namespace, applied once and never deleted, renders it; the
// examples own their provider namespace, never ESO's. Every build is found by walking deploy/, so
// a new overlay is checked without being listed here.

/** The folder of each kustomization under deploy/ that is a build of its own (not a `kind: Component`). */
function builds(dir = join(repoRoot, 'deploy')): string[] {
  const found: string[] = [];
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) found.push(...builds(path));
    else if (entry.name === 'kustomization.yaml') {
      const kind = (parse(readFileSync(path, 'utf8')) as { kind?: string }).kind ?? 'Kustomization';
      if (kind === 'Kustomization') found.push(relative(repoRoot, dir));
    }
  }
  return found.sort();
}

const namespacesOf = (dir: string): string[] =>
  kustomizeBuild(dir)
    .filter((m) => m.kind === 'Namespace')
    .map((m) => m.metadata!.name!);

describe('who owns a namespace in deploy/', () => {
  const all = builds();
  const examples = all.filter((d) => d.startsWith('deploy/examples/'));
  const installs = all.filter((d) => d !== 'deploy/namespace' && !examples.includes(d));

  it('finds the default build, the base and every overlay', () => {
    expect(installs).toEqual(expect.arrayContaining(['deploy', 'deploy/base', 'deploy/overlays/pod-certificates', 'deploy/overlays/provider-label-policy']));
    expect(installs.filter((d) => d.startsWith('deploy/overlays/')).length).toBeGreaterThanOrEqual(6);
  });

  it('renders no Namespace from deploy/, its base or any overlay: deleting an install never deletes the CA', () => {
    expect(installs.map((dir) => ({ dir, namespaces: namespacesOf(dir) }))).toEqual(installs.map((dir) => ({ dir, namespaces: [] })));
  });

  it("renders ESO's namespace from deploy/namespace alone, the namespace the controller defaults to", () => {
    expect(namespacesOf('deploy/namespace')).toEqual([DEFAULT_POLICY.esoNamespace]);
    for (const dir of examples)
      expect({ dir, namespaces: namespacesOf(dir) }).toEqual({ dir, namespaces: expect.not.arrayContaining([DEFAULT_POLICY.esoNamespace]) });
  });
});
