import { describe, expect, it } from '@jest/globals';
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync, readdirSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';

// What we publish must work outside the monorepo: pack every workspace package (from its built
// dist/), install the tarballs into an empty project, and import each entry point there.
const root = resolve(import.meta.dirname, '../..');
const workspaces: string[] = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8')).workspaces;
const packages = workspaces
  .filter((w) => w.startsWith('packages/'))
  .map((w) => ({ dir: join(root, w), manifest: JSON.parse(readFileSync(join(root, w, 'package.json'), 'utf8')) }));

function run(cmd: string, args: string[], cwd: string): string {
  return execFileSync(cmd, args, { cwd, encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'], timeout: 300_000 });
}

describe('published packages', () => {
  it('install from their tarballs into an empty project and import there', () => {
    const work = mkdtempSync(join(tmpdir(), 'eso-mtls-pack-'));
    try {
      const tarballs = packages.map(({ dir }) => {
        const out = run('npm', ['pack', '--silent', '--pack-destination', work], dir).trim().split('\n');
        return join(work, out[out.length - 1]!);
      });
      const app = join(work, 'app');
      run('mkdir', ['-p', app], work);
      writeFileSync(join(app, 'package.json'), JSON.stringify({ name: 'app', private: true, type: 'module' }));
      run('npm', ['install', '--no-audit', '--no-fund', '--prefer-offline', ...tarballs], app);

      const entries = packages.flatMap(({ manifest }) =>
        Object.keys(manifest.exports as Record<string, unknown>)
          .filter((k) => k !== './package.json')
          .map((k) => (k === '.' ? manifest.name : `${manifest.name}/${k.slice(2)}`)),
      );
      const script =
        entries
          .map(
            (e) =>
              `{ const m = await import(${JSON.stringify(e)}); if (Object.keys(m).length === 0) throw new Error('${e} exports nothing'); console.log('${e}', Object.keys(m).length); }`,
          )
          .join('\n') +
        // The .proto files ship in the tarball and are found relative to the installed module.
        `\n{ const g = await import('@eso-mtls/grpc'); const d = g.loadProtoDefinitions(); if (!d['provider.v1.SecretStoreProvider']) throw new Error('provider.v1 not loaded'); console.log('protos loaded'); }`;
      writeFileSync(join(app, 'check.mjs'), script);
      const out = run('node', ['check.mjs'], app);
      for (const e of entries) expect(out).toContain(e);
      expect(out).toContain('protos loaded');
      // The CLI's bin works from the installed tarball too.
      const simulated = run(join(app, 'node_modules/.bin/eso-mtls'), ['simulate', '--years', '1', '--services', '8'], app);
      expect(simulated).toMatch(/Violations: 0/);
      // Type declarations ship with every entry point.
      for (const { manifest } of packages) {
        const installed = join(app, 'node_modules', manifest.name);
        const types = Object.values(manifest.exports as Record<string, { types?: string }>).flatMap((v) => (typeof v === 'object' && v.types ? [v.types] : []));
        for (const t of types) expect(readdirSync(join(installed, t, '..'))).toContain(t.split('/').pop());
      }
    } finally {
      rmSync(work, { recursive: true, force: true });
    }
  }, 600_000);
});
