// The folders a provider process runs on, made before a suite's tests and removed after them.
import { afterAll, beforeAll } from '@jest/globals';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { writeAtomically } from '@eso-mtls/test-kit/demo';
import type { KeyPair } from '@eso-mtls/test-kit/pki';

/** What {@link useProviderDirs} gives a suite; call its getters inside tests (the folders are made in beforeAll). */
export interface ProviderDirs {
  /** The folder holding the data file, secrets.json. */
  dataDir(): string;
  /** The folder holding ca.crt, tls.crt and tls.key. */
  certDir(): string;
}

/**
 * Registers hooks that make a data folder holding `secrets` as secrets.json, and the cert folder
 * `makeCertDir` returns, then remove both after the suite. Register it after the hook that issues
 * the certificates: hooks run in the order they are registered.
 */
export function useProviderDirs(name: string, secrets: object, makeCertDir: () => Promise<string> | string): ProviderDirs {
  let dir: string | undefined;
  let certDir: string | undefined;
  const made = (value: string | undefined): string => {
    if (value === undefined) throw new Error('the provider folders are not made yet: use them inside tests only');
    return value;
  };

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), `file-provider-${name}-`));
    certDir = await makeCertDir();
    writeFileSync(join(dir, 'secrets.json'), JSON.stringify(secrets));
  });
  afterAll(() => {
    for (const d of [dir, certDir]) if (d) rmSync(d, { recursive: true, force: true });
  });

  return {
    dataDir: () => made(dir),
    certDir: () => made(certDir),
  };
}

/** A fresh cert folder holding `ca` and `pair`, laid out as the kubelet writes a Secret volume (a `..data` symlink). */
export async function kubeletCertDir(name: string, ca: string, pair: KeyPair): Promise<string> {
  const certDir = mkdtempSync(join(tmpdir(), `file-provider-${name}-certs-`));
  await writeAtomically(certDir, { 'ca.crt': ca, 'tls.crt': pair.cert, 'tls.key': pair.key });
  return certDir;
}
