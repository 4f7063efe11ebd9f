// `npm run test:fast`: every jest suite that needs no control plane and builds no image, for the
// inner loop. A suite needs one when it imports testing/envtest (or testing/images), directly or
// through its own test helpers; this follows relative imports from each test file, so a new suite
// is sorted without a list to keep.
import { spawnSync } from 'node:child_process';
import { existsSync, readFileSync, readdirSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';

const root = resolve(dirname(new URL(import.meta.url).pathname), '..');
const IMPORT = /(?:import|export)[^'"]*?from\s+'(\.{1,2}\/[^']+)'|import\(\s*'(\.{1,2}\/[^']+)'\s*\)/g;

function testFiles(dir) {
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) => {
    if (e.name === 'node_modules' || e.name === 'dist' || e.name.startsWith('.')) return [];
    const path = join(dir, e.name);
    return e.isDirectory() ? testFiles(path) : e.name.endsWith('.test.ts') ? [path] : [];
  });
}

// testing/getting-started: its page runs dev-cluster, with and without a real node (--node builds images).
const HEAVY = [join('testing', 'envtest'), join('testing', 'images'), join('testing', 'getting-started')];
const memo = new Map();
function needsControlPlane(file, seen = new Set()) {
  if (memo.has(file)) return memo.get(file);
  if (seen.has(file) || !existsSync(file)) return false;
  seen.add(file);
  const source = readFileSync(file, 'utf8');
  let needs = false;
  for (const m of source.matchAll(IMPORT)) {
    const target = resolve(dirname(file), (m[1] ?? m[2]).replace(/\.js$/, '.ts'));
    if (HEAVY.some((dir) => relative(root, target).startsWith(dir)) || needsControlPlane(target, seen)) {
      needs = true;
      break;
    }
  }
  memo.set(file, needs);
  return needs;
}

const all = ['packages', 'examples', 'testing'].flatMap((d) => testFiles(join(root, d)));
const fast = all.filter((f) => !needsControlPlane(f)).map((f) => relative(root, f));
console.error(`test:fast: ${fast.length} of ${all.length} suites (the others start kube-apiserver and etcd, or build images)`);
const jest = join(root, 'node_modules', 'jest', 'bin', 'jest.js');
const run = spawnSync(process.execPath, ['--experimental-vm-modules', jest, ...process.argv.slice(2), '--runTestsByPath', ...fast], {
  cwd: root,
  stdio: 'inherit',
});
process.exit(run.status ?? 1);
