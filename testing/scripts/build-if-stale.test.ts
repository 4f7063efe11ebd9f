// `npm test`'s build step (scripts/build-if-stale.mjs): a workspace is current only when its dist/
// is newer than everything it is built from; anything else builds.
import { describe, expect, it } from '@jest/globals';
import { mkdirSync, mkdtempSync, rmSync, utimesSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { repoRoot } from '@eso-mtls/test-kit/repo';
import { builtWorkspaces, staleness } from '../../scripts/build-if-stale.mjs';

/** Writes `file` (under `dir`) with the modification time `seconds`. */
function put(dir: string, file: string, seconds: number): string {
  const path = join(dir, file);
  mkdirSync(join(path, '..'), { recursive: true });
  writeFileSync(path, file);
  utimesSync(path, seconds, seconds);
  return path;
}

describe('build-if-stale', () => {
  it('is current only when its last build (the newest output) is newer than the newest input, its own or shared', () => {
    const repo = mkdtempSync(join(tmpdir(), 'build-if-stale-'));
    try {
      const ws = join(repo, 'packages', 'a');
      const shared = [put(repo, 'tsconfig.base.json', 100), put(repo, 'package-lock.json', 100)];
      expect(staleness(ws, shared)).toMatch(/no dist\/$/);
      put(ws, 'package.json', 100);
      put(ws, 'tsconfig.build.json', 100);
      put(ws, 'src/index.ts', 100);
      put(ws, 'src/deep/rule.ts', 100);
      put(ws, 'dist/index.js', 200);
      put(ws, 'dist/deep/rule.js', 200);
      expect(staleness(ws, shared)).toBeUndefined();

      put(ws, 'src/deep/rule.ts', 300); // an edited source, however deep
      expect(staleness(ws, shared)).toMatch(/changed since its last build$/);
      put(ws, 'src/deep/rule.ts', 100);
      put(ws, 'tsconfig.build.json', 300); // its compiler options
      expect(staleness(ws, shared)).toMatch(/changed since its last build$/);
      put(ws, 'tsconfig.build.json', 100);
      put(repo, 'package-lock.json', 300); // another version of a dependency
      expect(staleness(ws, shared)).toMatch(/changed since its last build$/);
      put(repo, 'package-lock.json', 100);
      put(ws, 'dist/left-over.js', 50); // an output of a source since deleted: the last build is still newer
      expect(staleness(ws, shared)).toBeUndefined();
    } finally {
      rmSync(repo, { recursive: true, force: true });
    }
  });

  it("reads this repository's workspaces that build: every package, none of the test kit", () => {
    const built = builtWorkspaces(repoRoot).map((dir) => dir.slice(repoRoot.length + 1));
    expect(built).toEqual(expect.arrayContaining(['packages/core', 'packages/kubernetes', 'packages/controller']));
    expect(built).not.toContain('testing/kit');
  });
});
