// Writes one CycloneDX SBOM per published package to dist/sbom/<name>-<version>.cdx.json: the
// package as packed, and the runtime dependency tree a user installs with it. Run after `npm run build`.
//
// Why not `npm sbom -w <package>` in the workspace: there the packages are links, so --omit dev
// drops runtime dependencies that the root also lists as devDependencies (grpc-js from
// @eso-mtls/grpc), and without --omit dev it adds the workspace's test tools. Instead each tarball
// goes into a scratch project whose lockfile is cut from ours (testing/packaging/support), and
// `npm sbom --package-lock-only` reads that. Offline: nothing is installed or fetched.
import { execFileSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';

await import('./register-ts.mjs');
const { packAll, writeOfflineLock } = await import('../testing/packaging/support/offline-install.ts');

const root = resolve(import.meta.dirname, '..');
const out = join(root, 'dist', 'sbom');
mkdirSync(out, { recursive: true });
const work = mkdtempSync(join(tmpdir(), 'eso-mtls-sbom-'));
try {
  const packed = packAll(join(work, 'tarballs'));
  for (const pkg of packed) {
    const { name, version } = pkg.manifest;
    const project = join(work, name.replace('/', '+'));
    mkdirSync(project);
    const manifest = { name: 'sbom-of', version: '0.0.0', private: true, dependencies: { [name]: `file:../tarballs/${pkg.filename}` } };
    writeFileSync(join(project, 'package.json'), JSON.stringify(manifest));
    writeOfflineLock(project, manifest, packed, (p) => `file:../tarballs/${p.filename}`);
    const sbom = JSON.parse(
      execFileSync('npm', ['sbom', '--sbom-format', 'cyclonedx', '--sbom-type', 'library', '--package-lock-only', '--omit', 'dev'], {
        cwd: project,
        encoding: 'utf8',
        maxBuffer: 64 * 1024 * 1024,
        stdio: ['ignore', 'pipe', 'pipe'],
      }),
    );
    // The scratch project is not the subject: the package is.
    const self = sbom.components.find((c) => c.name === name && c.version === version);
    if (!self) throw new Error(`npm sbom listed no ${name}@${version} component; is ${pkg.filename} in the scratch lockfile?`);
    sbom.metadata.component = self;
    sbom.components = sbom.components.filter((c) => c !== self);
    sbom.dependencies = (sbom.dependencies ?? []).filter((d) => d.ref !== 'sbom-of@0.0.0');
    const file = join(out, `${name.replace('@', '').replace('/', '-')}-${version}.cdx.json`);
    writeFileSync(file, JSON.stringify(sbom, null, 2) + '\n');
    console.log(`${file.slice(root.length + 1)}: ${name}@${version} and ${sbom.components.length} dependencies`);
  }
} finally {
  rmSync(work, { recursive: true, force: true });
}
