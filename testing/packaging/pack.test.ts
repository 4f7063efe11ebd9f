import { describe, expect, it } from '@jest/globals';
import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, readdirSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, relative } from 'node:path';
import { codeBlocks } from '../docs/markdown-blocks.js';
import { fileLinks } from '../docs/markdown-links.js';
import { type Manifest, installApp, packAll, root, run, workspacePackages } from './support/offline-install.js';

// What we publish must work outside the monorepo: pack every workspace package (from its built
// dist/), check what each tarball holds, install the tarballs into an empty project with no
// registry, import each entry point there, run the CLI, and type-check a consumer with
// skipLibCheck: false, as a strict user's project does.

/** Entry-point specifiers of a package: `@eso-mtls/core`, `@eso-mtls/core/node`, ... */
function entryPoints(manifest: Manifest): string[] {
  return Object.keys(manifest.exports ?? {})
    .filter((k) => k !== './package.json')
    .map((k) => (k === '.' ? manifest.name : `${manifest.name}/${k.slice(2)}`));
}

/** The files a manifest promises: its exports' targets, main, types and bin. */
function promisedFiles(manifest: Manifest & { main?: string; types?: string }): string[] {
  const targets = Object.values(manifest.exports ?? {}).flatMap((v) => (typeof v === 'string' ? [v] : Object.values(v as Record<string, string>)));
  return [...targets, manifest.main, manifest.types, ...Object.values(manifest.bin ?? {})]
    .filter((f): f is string => typeof f === 'string' && f !== './package.json')
    .map((f) => f.replace(/^\.\//, ''));
}

/**
 * Why `file` should not ship in the package at `dir`, or undefined if it belongs: the manifest and
 * README, the compiled output of a source file that still exists (a leftover of a deleted source
 * means a stale dist/: rebuild from clean), the grpc package's .proto files, and a committed
 * launcher the manifest's "bin" names (the controller's bin/eso-mtls.js).
 */
function unintended(dir: string, file: string, bins: readonly string[]): string | undefined {
  if (file === 'package.json' || file === 'README.md' || file === 'LICENSE') return undefined;
  if (/^bin\/[^/]+\.js$/.test(file) && bins.includes(file)) return undefined;
  if (/^proto\/.+\.proto$/.test(file)) return undefined;
  const built = /^dist\/(.+)\.(js|d\.ts|js\.map|d\.ts\.map)$/.exec(file);
  if (!built) return 'not build output, a README or a .proto file';
  if (!existsSync(join(dir, 'src', `${built[1]}.ts`))) return `no src/${built[1]}.ts: stale build output; delete dist/ and run \`npm run build\``;
  return undefined;
}

describe('published packages', () => {
  it('each hold their build, declarations, README, LICENSE and nothing else (npm pack --dry-run)', () => {
    for (const { dir, manifest } of workspacePackages()) {
      const [packed] = JSON.parse(run('npm', ['pack', '--dry-run', '--json', '--ignore-scripts'], dir)) as { files: { path: string }[] }[];
      const files = packed!.files.map((f) => f.path);
      const wrong = files.flatMap((f) => {
        const why = unintended(
          dir,
          f,
          Object.values(manifest.bin ?? {}).map((b) => b.replace(/^\.\//, '')),
        );
        return why ? [`${manifest.name}: ${f}: ${why}`] : [];
      });
      expect(wrong).toEqual([]);
      const missing = [...promisedFiles(manifest), 'README.md', 'LICENSE'].filter((f) => !files.includes(f));
      expect(missing.map((f) => `${manifest.name} lacks ${f}`)).toEqual([]);
      // Apache-2.0 asks that every copy carry the license: each package ships the repository's.
      expect(readFileSync(join(dir, 'LICENSE'), 'utf8')).toBe(readFileSync(join(root, 'LICENSE'), 'utf8'));
      // Tests, sources, API reports and configs stay home.
      expect(files.filter((f) => /(^|\/)(test|src|etc)\/|tsconfig|api-extractor|\.tsbuildinfo$/.test(f))).toEqual([]);
    }
  });

  // A README's link relative to the repository (../../docs/x.md) works on GitHub and breaks in the
  // installed package (node_modules/@eso-mtls/x/README.md, the registry's page): links leave the
  // package by absolute URL, to the repository its package.json names, and name files that exist.
  it("README links stay inside the package or name the repository's files by URL; each manifest names the repository", () => {
    const REPOSITORY = 'https://github.com/eso-mtls/eso-mtls';
    const problems: string[] = [];
    for (const { dir, manifest } of workspacePackages()) {
      const folder = relative(root, dir);
      expect({ name: manifest.name, repository: (manifest as { repository?: unknown }).repository }).toEqual({
        name: manifest.name,
        repository: { type: 'git', url: `git+${REPOSITORY}.git`, directory: folder },
      });
      const readme = join(folder, 'README.md');
      const text = readFileSync(join(root, readme), 'utf8');
      for (const link of fileLinks(text, readme, root)) {
        if (!link.path.startsWith(`${folder}/`) && link.path !== readme)
          problems.push(`${readme}:${link.line}: (${link.target}) leaves the package; link ${REPOSITORY}/blob/main/${link.path} instead`);
      }
      for (const [, path] of text.matchAll(/\]\(https:\/\/github\.com\/eso-mtls\/eso-mtls\/(?:blob|tree)\/main\/([^)#\s]+)/g)) {
        if (!existsSync(join(root, path!))) problems.push(`${readme}: links ${path}, which the repository does not have`);
      }
    }
    expect(problems).toEqual([]);
  });

  it('install from their tarballs without a registry, import, run the CLI and type-check with skipLibCheck: false', () => {
    const work = mkdtempSync(join(tmpdir(), 'eso-mtls-pack-'));
    try {
      const packed = packAll(join(work, 'tarballs'));
      const app = installApp(work, 'app', packed);

      const entries = packed.flatMap((p) => entryPoints(p.manifest));
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
      // dev-certs, as docs/provider-developers.md runs it, from @eso-mtls/devtools installed beside the command.
      const certs = join(app, '.eso-mtls-dev', 'certs');
      const written = run(join(app, 'node_modules/.bin/eso-mtls'), ['dev-certs', '--dir', certs, '--provider', 'my-provider', '--once'], app);
      expect(written).toContain(`eso-mtls dev-certs: certificates written under ${certs}`);
      expect(readdirSync(certs).sort()).toEqual(expect.arrayContaining(['ca', 'eso-client', 'my-provider.provider-system']));
      // Without devtools the command says which package to install, and exits 1.
      renameSync(join(app, 'node_modules/@eso-mtls/devtools'), join(work, 'devtools-aside'));
      const without = spawnSync(join(app, 'node_modules/.bin/eso-mtls'), ['dev-certs', '--help'], { cwd: app, encoding: 'utf8' });
      expect({ status: without.status, stdout: without.stdout }).toEqual({ status: 1, stdout: '' });
      expect(without.stderr).toContain('eso-mtls dev-certs needs @eso-mtls/devtools, which is not installed');
      const noChart = spawnSync(join(app, 'node_modules/.bin/eso-mtls'), ['simulate', '--chart', join(app, 'timeline.svg')], { cwd: app, encoding: 'utf8' });
      expect({ status: noChart.status, stdout: noChart.stdout }).toEqual({ status: 1, stdout: '' });
      expect(noChart.stderr).toContain('eso-mtls simulate --chart needs @eso-mtls/devtools, which is not installed');
      renameSync(join(work, 'devtools-aside'), join(app, 'node_modules/@eso-mtls/devtools'));

      // A consumer importing every entry point type-checks against the shipped declarations and
      // everything they reach (client-node's, grpc-js's, ws's), with the compiler this repo pins.
      writeFileSync(
        join(app, 'consumer.ts'),
        entries.map((e, i) => `import * as entry${i} from ${JSON.stringify(e)};`).join('\n') +
          `\nexport const entries = [${entries.map((_, i) => `entry${i}`).join(', ')}];\n` +
          `import { type Policy, resolvePolicy } from '@eso-mtls/core';\n` +
          `import { createNodeCryptoBackend } from '@eso-mtls/core/node';\n` +
          `import type { ProviderCertificateAdapter } from '@eso-mtls/kubernetes';\n` +
          `export const policy: Policy = resolvePolicy({ clusterDomain: 'example.internal' });\n` +
          `export const crypto = createNodeCryptoBackend();\n` +
          `export type Adapter = ProviderCertificateAdapter;\n`,
      );
      writeFileSync(
        join(app, 'tsconfig.json'),
        JSON.stringify({
          compilerOptions: {
            target: 'ES2022',
            module: 'NodeNext',
            moduleResolution: 'NodeNext',
            strict: true,
            skipLibCheck: false,
            noEmit: true,
            types: ['node'],
          },
          files: ['consumer.ts'],
        }),
      );
      const tsc = join(root, 'node_modules/typescript/bin/tsc');
      expect(run(process.execPath, [tsc, '-p', 'tsconfig.json', '--pretty', 'false'], app)).toBe('');

      // Type declarations ship with every entry point.
      for (const { manifest: m } of packed) {
        const installed = join(app, 'node_modules', m.name);
        const types = Object.values(m.exports as Record<string, { types?: string }>).flatMap((v) => (typeof v === 'object' && v.types ? [v.types] : []));
        for (const t of types) expect(readdirSync(join(installed, t, '..'))).toContain(t.split('/').pop());
      }
    } finally {
      rmSync(work, { recursive: true, force: true });
    }
  }, 600_000);

  it('install from the tarballs docs/provider-developers.md names, alone, in the order and the one command it gives', () => {
    const page = readFileSync(join(root, 'docs', 'provider-developers.md'), 'utf8');
    const blocks = codeBlocks(page, 'docs/provider-developers.md');
    // The block of `set` holding the `npm <verb>` command, and that command: one line.
    const blockOf = (set: string, verb: 'pack' | 'install'): { lines: string[]; command: string } => {
      const block = blocks.find(
        (b) => b.language === 'sh' && b.flags.includes(`tarballs=${set}`) && b.code.split('\n').some((l) => l.startsWith(`npm ${verb} `)),
      );
      if (block === undefined) throw new Error(`docs/provider-developers.md has no \`\`\`sh tarballs=${set} block with npm ${verb}`);
      const lines = block.code.split('\n');
      const command = lines.find((l) => l.startsWith(`npm ${verb} `))!;
      expect(command.endsWith('\\')).toBe(false); // one command, on one line
      return { lines, command };
    };
    const named = (set: string, verb: 'pack' | 'install'): string[] => {
      const pattern = verb === 'pack' ? / -w packages\/([a-z0-9-]+)/g : / \.\/eso-mtls-([a-z0-9-]+)-\*\.tgz/g;
      return [...blockOf(set, verb).command.matchAll(pattern)].map((m) => `@eso-mtls/${m[1]}`);
    };
    const manifests = new Map(workspacePackages().map((p) => [p.manifest.name, p.manifest]));
    // A package and every @eso-mtls package it depends on, each after its dependencies.
    const closure = (name: string, into: string[] = []): string[] => {
      for (const dep of Object.keys(manifests.get(name)?.dependencies ?? {})) if (dep.startsWith('@eso-mtls/')) closure(dep, into);
      if (!into.includes(name)) into.push(name);
      return into;
    };
    const provider = named('provider', 'install');
    expect(named('provider', 'pack')).toEqual(provider);
    expect([...provider].sort()).toEqual(closure('@eso-mtls/grpc').sort());
    const cli = named('cli', 'install');
    // dev-certs, which the page starts with, comes with devtools: it and everything it depends on, the command's package among them.
    expect([...cli].sort()).toEqual(closure('@eso-mtls/devtools').sort());
    for (const order of [provider, cli]) {
      for (const [i, name] of order.entries()) expect(closure(name).every((dep) => order.indexOf(dep) <= i)).toBe(true);
    }
    // Why they go together: grpc pins its siblings to its own version exactly.
    const grpc = manifests.get('@eso-mtls/grpc')!;
    for (const dep of ['@eso-mtls/core', '@eso-mtls/metrics']) expect(grpc.dependencies?.[dep]).toBe(grpc.version);

    const work = mkdtempSync(join(tmpdir(), 'eso-mtls-pack-provider-'));
    try {
      // The page's lines around its two commands, run as written from a clone's folder: the pack
      // makes its destination (npm pack fails on a missing one), and a new project gets
      // "type": "module" (the page's provider uses import and top-level await).
      const pack = blockOf('provider', 'pack');
      const destination = / --pack-destination (\S+)/.exec(pack.command)?.[1];
      expect(pack.lines.slice(0, pack.lines.indexOf(pack.command))).toContain(`mkdir -p ${destination}`);
      const install = blockOf('provider', 'install');
      const setUp = [...pack.lines.filter((l) => !l.startsWith('npm pack ')), ...install.lines.slice(0, install.lines.indexOf(install.command))];
      mkdirSync(join(work, 'clone'));
      run('bash', ['-euc', setUp.join('\n')], join(work, 'clone'));
      const project = join(work, 'clone', destination!);
      expect((JSON.parse(readFileSync(join(project, 'package.json'), 'utf8')) as { type?: string }).type).toBe('module');

      const packed = packAll(join(work, 'tarballs'), provider);
      expect(packed.map((p) => p.manifest.name).sort()).toEqual([...provider].sort());
      const app = installApp(work, 'my-provider', packed);
      writeFileSync(
        join(app, 'check.mjs'),
        `const g = await import('@eso-mtls/grpc'); if (typeof g.startProviderServer !== 'function' || !g.loadProtoDefinitions()['provider.v1.SecretStoreProvider']) throw new Error('grpc incomplete'); console.log('provider ready');`,
      );
      expect(run('node', ['check.mjs'], app)).toContain('provider ready');
    } finally {
      rmSync(work, { recursive: true, force: true });
    }
  }, 600_000);
});
