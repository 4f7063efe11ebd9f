// `npm test`'s build: `npm run build`, unless every workspace's dist/ is newer than all it is built
// from. `npm ci` has just built everything (the root `prepare` script), so CI's `npm test` would
// otherwise compile the same sources a second time, about a minute on 2 cores.
//
// A workspace with a build script is current when its dist/ holds files and the newest of them
// (tsc writes every output at each build, so that is the last build's time) is newer than the
// newest of: its src/, its package.json and tsconfig files, and the repository's
// tsconfig.base.json and package-lock.json. Any stale workspace builds them all, since one's types
// feed the next.
import { spawnSync } from 'node:child_process';
import { existsSync, readFileSync, readdirSync, statSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = resolve(dirname(fileURLToPath(import.meta.url)), '..');

/** The modification times of the files under `dir` (none when it does not exist). */
function fileTimes(dir) {
  if (!existsSync(dir)) return [];
  return readdirSync(dir, { withFileTypes: true, recursive: true })
    .filter((e) => e.isFile())
    .map((e) => statSync(join(e.parentPath, e.name)).mtimeMs);
}

/** Why the workspace at `dir` must be built, or undefined when its dist/ is current. */
export function staleness(dir, shared) {
  const outputs = fileTimes(join(dir, 'dist'));
  if (outputs.length === 0) return `${dir}: no dist/`;
  const configs = readdirSync(dir).filter((f) => f === 'package.json' || /^tsconfig.*\.json$/.test(f));
  const inputs = [...fileTimes(join(dir, 'src')), ...configs.map((f) => statSync(join(dir, f)).mtimeMs), ...shared.map((f) => statSync(f).mtimeMs)];
  const built = Math.max(...outputs);
  return Math.max(...inputs) > built ? `${dir}: changed since its last build` : undefined;
}

/** The workspaces of `repo` that have a build script. */
export function builtWorkspaces(repo) {
  const workspaces = JSON.parse(readFileSync(join(repo, 'package.json'), 'utf8')).workspaces ?? [];
  return workspaces.map((w) => join(repo, w)).filter((dir) => JSON.parse(readFileSync(join(dir, 'package.json'), 'utf8')).scripts?.build !== undefined);
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const shared = ['tsconfig.base.json', 'package-lock.json'].map((f) => join(root, f)).filter((f) => existsSync(f));
  const stale = builtWorkspaces(root)
    .map((dir) => staleness(dir, shared))
    .find((why) => why !== undefined);
  if (stale === undefined) {
    console.log('build: every workspace is built from its current sources; not building again');
  } else {
    console.log(`build: ${stale.replace(`${root}/`, '')}`);
    const run = spawnSync('npm', ['run', 'build'], { cwd: root, stdio: 'inherit' });
    process.exit(run.status ?? 1);
  }
}
