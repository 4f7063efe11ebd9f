import { describe, expect, it } from '@jest/globals';
import { copyFileSync, mkdtempSync, readFileSync, readdirSync, renameSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { installOffline, packAll, root, run, writeOfflineLock } from './support/offline-install.js';

// examples/policy-test is a user's project: it depends on @eso-mtls/core through a tarball and runs
// its own jest. Copy it out of the repository, give it the tarball packed from this build, install
// it without a registry and run its `npm test`, so the example works exactly as shipped.

const example = join(root, 'examples/policy-test');

describe('examples/policy-test', () => {
  it('installs from the packed tarball and its jest test passes', () => {
    const work = mkdtempSync(join(tmpdir(), 'eso-mtls-policy-test-'));
    try {
      const project = join(work, 'policy-test');
      const tarballs = join(project, 'tarballs');
      const manifest = JSON.parse(readFileSync(join(example, 'package.json'), 'utf8')) as { dependencies: Record<string, string> };
      const packed = packAll(tarballs, Object.keys(manifest.dependencies));
      // The example names its tarball without a version, so releases do not rewrite it.
      for (const p of packed) renameSync(p.tarball, join(tarballs, `${p.manifest.name.replace('@', '').replace('/', '-')}.tgz`));
      for (const file of readdirSync(example)) if (/\.(json|ts|md)$/.test(file)) copyFileSync(join(example, file), join(project, file));

      writeOfflineLock(project, manifest, packed, (p) => manifest.dependencies[p.manifest.name]!);
      installOffline(project);
      // The example's own tsconfig (skipLibCheck: false) type-checks it against the shipped declarations.
      run('npm', ['run', 'typecheck', '--silent', '--', '--pretty', 'false'], project);

      // A failing jest exits non-zero, and run() throws with its report.
      const json = JSON.parse(run('npm', ['test', '--silent', '--', '--ci', '--json'], project)) as {
        numPassedTests: number;
        numFailedTests: number;
        numTotalTests: number;
      };
      expect(json.numFailedTests).toBe(0);
      // Every test of the example ran and passed (ECDSA, RSA-2048 with pooled keys, the refusal).
      expect(json.numPassedTests).toBe(3);
    } finally {
      rmSync(work, { recursive: true, force: true });
    }
  }, 600_000);
});
