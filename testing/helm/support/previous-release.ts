import { execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync, symlinkSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { repoRoot } from '@eso-mtls/test-kit/repo';

/**
 * The controller of version 0.1.0, the one the packaged chart fixtures/eso-mtls-0.1.0.tgz deploys:
 * the sources of commit 2df582f (main when the chart was first written), committed as an archive so
 * the test needs no git history (CI may clone shallow). Made with:
 *   git archive --format=tar 2df582f <packages/{name}/src/** and package.json> scripts/register-ts.mjs \
 *     scripts/ts-loader.mjs package.json tsconfig.base.json | gzip -9n
 */
const PREVIOUS_SOURCES = resolve(repoRoot, 'testing/helm/fixtures/controller-0.1.0-src.tar.gz');

/** A read-only copy of another version's sources, runnable with ControllerProcess's `root`. */
export interface PreviousSources {
  readonly root: string;
  remove(): void;
}

/**
 * Extracts the previous controller's sources into a temp folder, sharing this clone's node_modules:
 * the loader of that version maps @eso-mtls/* to its own packages, so only third-party code is shared.
 */
export function extractPreviousSources(archive = PREVIOUS_SOURCES): PreviousSources {
  const root = mkdtempSync(join(tmpdir(), 'eso-mtls-previous-'));
  try {
    execFileSync('tar', ['-xzf', archive, '-C', root]);
    symlinkSync(resolve(repoRoot, 'node_modules'), join(root, 'node_modules'), 'dir');
  } catch (e) {
    rmSync(root, { recursive: true, force: true });
    throw e;
  }
  return { root, remove: () => rmSync(root, { recursive: true, force: true }) };
}
