import { execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { CryptoBackend } from '@eso-mtls/core';
import { createNodeCryptoBackend } from '@eso-mtls/core/node';

// One deterministic RandomSource for the whole project: the core's own.
export { seededRandom } from '@eso-mtls/core';

/** The node:crypto backend, as production uses it. */
export const nodeBackend = (): CryptoBackend => createNodeCryptoBackend();

/** A fixed, whole-second-unaligned instant, so truncation is visible. */
export const NOW = Date.parse('2026-11-15T10:20:30.456Z');

/** A temporary folder removed by the returned cleanup. */
export function tempDir(prefix: string): { readonly dir: string; readonly write: (name: string, text: string) => string; readonly remove: () => void } {
  const dir = mkdtempSync(join(tmpdir(), `${prefix}-`));
  return {
    dir,
    write: (name, text) => {
      const path = join(dir, name);
      writeFileSync(path, text);
      return path;
    },
    remove: () => rmSync(dir, { recursive: true, force: true }),
  };
}

/** Runs openssl; returns its exit status and combined output instead of throwing. */
export function openssl(args: readonly string[]): { readonly status: number; readonly output: string } {
  try {
    const out = execFileSync('openssl', args, { encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] });
    return { status: 0, output: out };
  } catch (e) {
    const err = e as { status?: number; stdout?: string; stderr?: string };
    return { status: err.status ?? 1, output: `${err.stdout ?? ''}${err.stderr ?? ''}` };
  }
}
