import { readFileSync } from 'node:fs';

/**
 * The version of @eso-mtls/controller, read from its package.json (one folder above dist/ and
 * src/ alike), so `eso-mtls --version` can never disagree with what npm installed.
 */
export function controllerVersion(): string {
  const manifest = JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8')) as { name?: string; version?: string };
  if (typeof manifest.version !== 'string') throw new Error(`${manifest.name ?? '@eso-mtls/controller'}: package.json has no version`);
  return manifest.version;
}
