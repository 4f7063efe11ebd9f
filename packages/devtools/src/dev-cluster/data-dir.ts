import { existsSync, mkdirSync, readdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

/** Marks a folder as a dev-cluster's, so an existing folder of something else is never used (or removed). */
const MARKER = '.eso-mtls-dev-cluster';

/**
 * Makes `dir` ready for a control plane: creates it, or reuses one a previous run kept (`--keep`:
 * its etcd data, admin token and service-account signing key, so earlier tokens stay valid).
 * Throws, naming the folder, if it exists and belongs to something else.
 */
export function prepareDataDir(dir: string): { readonly reused: boolean } {
  if (existsSync(dir)) {
    const entries = readdirSync(dir);
    if (entries.length > 0 && !entries.includes(MARKER)) {
      throw new Error(`--dir ${dir} exists and is not a dev-cluster folder (no ${MARKER} in it): choose another --dir, or remove it`);
    }
    if (entries.length > 0) return { reused: true };
  }
  mkdirSync(dir, { recursive: true, mode: 0o700 });
  writeFileSync(join(dir, MARKER), 'made by eso-mtls dev-cluster; removed with this folder on Ctrl-C unless --keep\n');
  return { reused: false };
}
