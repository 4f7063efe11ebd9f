import { execFileSync } from 'node:child_process';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';

// Packs the workspace packages and installs them into a scratch project the way a user would, but
// without a registry: the scratch project gets a package-lock.json cut from the workspace's own
// lockfile, and `npm ci --offline` takes every tarball from the npm cache that the workspace's
// `npm ci` filled. A dependency missing from that cache fails the install (ENOTCACHED) instead of
// reaching the network.

/** The repository root. */
export const root = resolve(import.meta.dirname, '../../..');

/** A workspace package under packages/: where it lives and its manifest. */
export interface WorkspacePackage {
  readonly dir: string;
  readonly manifest: Manifest;
}

/** A package packed into a tarball. */
export interface PackedPackage extends WorkspacePackage {
  /** Absolute path of the .tgz. */
  readonly tarball: string;
  /** The tarball's file name. */
  readonly filename: string;
  /** The tarball's sha512 Subresource Integrity string, as npm records it in a lockfile. */
  readonly integrity: string;
  /** What the tarball holds, as `npm pack --json` lists it. */
  readonly files: readonly string[];
}

/** The manifest fields this helper reads. */
export interface Manifest {
  readonly name: string;
  readonly version: string;
  readonly dependencies?: Readonly<Record<string, string>>;
  readonly exports?: Readonly<Record<string, unknown>>;
  readonly bin?: Readonly<Record<string, string>>;
  readonly files?: readonly string[];
  readonly engines?: Readonly<Record<string, string>>;
  readonly license?: string;
}

interface LockEntry {
  readonly version?: string;
  readonly resolved?: string;
  readonly integrity?: string;
  readonly link?: boolean;
  readonly dependencies?: Record<string, string>;
  readonly optionalDependencies?: Record<string, string>;
  readonly peerDependencies?: Record<string, string>;
  readonly peerDependenciesMeta?: Record<string, { optional?: boolean }>;
  readonly [key: string]: unknown;
}

/** Runs a command and returns its stdout; a failure carries the command's stderr. */
export function run(cmd: string, args: readonly string[], cwd: string, env: NodeJS.ProcessEnv = {}): string {
  try {
    return execFileSync(cmd, args, {
      cwd,
      encoding: 'utf8',
      stdio: ['ignore', 'pipe', 'pipe'],
      timeout: 600_000,
      maxBuffer: 64 * 1024 * 1024,
      env: { ...process.env, ...env },
    });
  } catch (e) {
    const failure = e as { stderr?: string; stdout?: string; message: string };
    throw new Error(`${cmd} ${args.join(' ')} (in ${cwd}) failed: ${failure.message}\n${failure.stdout ?? ''}\n${failure.stderr ?? ''}`, { cause: e });
  }
}

/** The published packages: every workspace under packages/. */
export function workspacePackages(): WorkspacePackage[] {
  const workspaces: string[] = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8')).workspaces;
  return workspaces
    .filter((w) => w.startsWith('packages/'))
    .map((w) => ({ dir: join(root, w), manifest: JSON.parse(readFileSync(join(root, w, 'package.json'), 'utf8')) as Manifest }));
}

/** Packs every workspace package (from its built dist/), or those `only` names, into `destination`. */
export function packAll(destination: string, only?: readonly string[]): PackedPackage[] {
  mkdirSync(destination, { recursive: true });
  const chosen = workspacePackages().filter((pkg) => only === undefined || only.includes(pkg.manifest.name));
  return chosen.map((pkg) => {
    const [result] = JSON.parse(run('npm', ['pack', '--json', '--ignore-scripts', '--pack-destination', destination], pkg.dir)) as {
      filename: string;
      integrity: string;
      files: { path: string }[];
    }[];
    if (!result) throw new Error(`npm pack printed nothing for ${pkg.manifest.name}`);
    return {
      ...pkg,
      tarball: join(destination, result.filename),
      filename: result.filename,
      integrity: result.integrity,
      files: result.files.map((f) => f.path),
    };
  });
}

/** The module-resolution parent of a lockfile location: `a/node_modules/b` -> `a`, `node_modules/b` -> ''. */
function parentOf(location: string): string {
  const i = location.lastIndexOf('/node_modules/');
  // `packages/x` (a workspace) and `node_modules/b` both resolve next from the root.
  return i >= 0 ? location.slice(0, i) : '';
}

/** Where Node finds `name` from the package at `from`, in the workspace lockfile. */
function locate(packages: Readonly<Record<string, LockEntry>>, from: string, name: string): string | undefined {
  for (let dir = from; ; dir = parentOf(dir)) {
    const candidate = dir === '' ? `node_modules/${name}` : `${dir}/node_modules/${name}`;
    if (packages[candidate] && !packages[candidate].link) return candidate;
    if (dir === '') return undefined;
  }
}

/**
 * Writes `project`/package-lock.json for a project whose package.json depends on the packed
 * tarballs (as `file:` specs relative to the project) plus `extra` packages the workspace already
 * locks (devDependencies of an example, say). Every entry comes from the workspace's lockfile, in
 * its hoisted layout, so `npm ci --offline` needs no package metadata, only cached tarballs.
 */
export function writeOfflineLock(
  project: string,
  manifest: Record<string, unknown>,
  packed: readonly PackedPackage[],
  tarballSpec: (p: PackedPackage) => string,
): void {
  const workspaceLock = JSON.parse(readFileSync(join(root, 'package-lock.json'), 'utf8')) as { packages: Record<string, LockEntry> };
  const source = workspaceLock.packages;
  const byName = new Map(packed.map((p) => [p.manifest.name, p]));
  const lock: Record<string, LockEntry> = { '': manifest as LockEntry };
  // Workspace location -> scratch location, and the other way for lookups.
  const queue: { from: string; to: string; entry: LockEntry }[] = [];
  const place = (name: string): void => {
    const p = byName.get(name)!;
    const to = `node_modules/${name}`;
    if (lock[to]) return;
    const entry: LockEntry = {
      version: p.manifest.version,
      resolved: tarballSpec(p),
      integrity: p.integrity,
      license: p.manifest.license,
      dependencies: { ...(p.manifest.dependencies ?? {}) },
      ...(p.manifest.bin ? { bin: p.manifest.bin } : {}),
      ...(p.manifest.engines ? { engines: p.manifest.engines } : {}),
    };
    lock[to] = entry;
    queue.push({ from: `packages/${name.split('/')[1]}`, to, entry });
  };
  const toScratch = (location: string): string => location.replace(/^packages\/([^/]+)\//, 'node_modules/@eso-mtls/$1/');
  const deps = { ...((manifest.dependencies as Record<string, string>) ?? {}), ...((manifest.devDependencies as Record<string, string>) ?? {}) };
  for (const name of Object.keys(deps)) {
    if (byName.has(name)) place(name);
    else {
      const at = locate(source, '', name);
      if (!at) throw new Error(`${name} is not in the workspace's package-lock.json; add it to the workspace or drop it from the project`);
      queue.push({ from: at, to: at, entry: (lock[at] = withResolved(at, strip(source[at]!))) });
    }
  }
  while (queue.length > 0) {
    const { from, entry } = queue.shift()!;
    const wanted = { ...(entry.dependencies ?? {}), ...(entry.optionalDependencies ?? {}), ...(entry.peerDependencies ?? {}) };
    for (const name of Object.keys(wanted)) {
      if (byName.has(name)) {
        place(name);
        continue;
      }
      const at = locate(source, from, name);
      if (!at) {
        const optional = entry.optionalDependencies?.[name] !== undefined || entry.peerDependenciesMeta?.[name]?.optional === true;
        if (optional) continue;
        throw new Error(`${name}, needed from ${from}, is not in the workspace's package-lock.json`);
      }
      const to = toScratch(at);
      if (lock[to]) continue;
      lock[to] = withResolved(at, strip(source[at]!));
      queue.push({ from: at, to, entry: lock[to] });
    }
  }
  const sorted = Object.fromEntries(Object.entries(lock).sort(([a], [b]) => (a === '' ? -1 : b === '' ? 1 : a.localeCompare(b))));
  writeFileSync(
    join(project, 'package-lock.json'),
    JSON.stringify({ name: manifest.name, lockfileVersion: 3, requires: true, packages: sorted }, null, 2) + '\n',
  );
}

/**
 * The entry with its registry tarball URL: the workspace lockfile leaves `resolved` out, and
 * without it npm would ask the registry for the package's metadata just to find the tarball.
 * The tarball itself then comes from the cache, found by `integrity`.
 */
function withResolved(location: string, entry: LockEntry): LockEntry {
  if (entry.resolved !== undefined || entry.version === undefined) return entry;
  const name = typeof entry.name === 'string' ? entry.name : location.slice(location.lastIndexOf('node_modules/') + 'node_modules/'.length);
  const base = name.split('/').pop()!;
  return { ...entry, resolved: `https://registry.npmjs.org/${name}/-/${base}-${entry.version}.tgz` };
}

/** A workspace lock entry as a production entry of the scratch project. */
function strip(entry: LockEntry): LockEntry {
  const copy: Record<string, unknown> = { ...entry };
  delete copy.dev;
  delete copy.devOptional;
  return copy as LockEntry;
}

/**
 * `npm ci` from the cache only, never the network: --offline makes a missing tarball an error, and
 * the registry is set to a closed loopback port as a second guard. Install scripts stay off, as in a
 * careful user's project.
 */
export function installOffline(project: string): void {
  run('npm', ['ci', '--offline', '--ignore-scripts', '--no-audit', '--no-fund', '--loglevel=error'], project, {
    // Tarballs are found in the cache by their integrity, whatever the URL; nothing listens here.
    npm_config_registry: 'http://127.0.0.1:9/',
    npm_config_offline: 'true',
    npm_config_update_notifier: 'false',
  });
}

/**
 * A user's project in `work/app` (named `name`) that depends on every tarball of `packed` by
 * file, installed offline: what a user gets from `npm install ./tarballs/*.tgz`.
 */
export function installApp(work: string, name: string, packed: readonly PackedPackage[]): string {
  const app = join(work, 'app');
  mkdirSync(app);
  const spec = (p: PackedPackage) => `file:../tarballs/${p.filename}`;
  const manifest = {
    name,
    version: '1.0.0',
    private: true,
    type: 'module',
    dependencies: Object.fromEntries(packed.map((p) => [p.manifest.name, spec(p)])),
  };
  writeFileSync(join(app, 'package.json'), JSON.stringify(manifest, null, 2));
  writeOfflineLock(app, manifest, packed, spec);
  installOffline(app);
  return app;
}
