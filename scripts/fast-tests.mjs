// `npm run test:fast`: every jest suite that needs no control plane and builds no image, for the
// inner loop. A suite needs one when it imports testing/envtest (or testing/images), directly or
// through its own test helpers or the test kit; this follows relative imports and the kit's modules
// (@eso-mtls/test-kit/<module>) from each test file, so a new suite
// is sorted without a list to keep.
import { spawnSync } from 'node:child_process';
import { existsSync, readFileSync, readdirSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';

const root = resolve(dirname(new URL(import.meta.url).pathname), '..');
const IMPORT = /(?:import|export)[^'"]*?from\s+'(\.{1,2}\/[^']+|@eso-mtls\/test-kit\/[a-z-]+)'|import\(\s*'(\.{1,2}\/[^']+)'\s*\)/g;
const KIT = /^@eso-mtls\/test-kit\/([a-z-]+)$/;

/** The file an import names: relative, or a module of the test kit (testing/kit/src). */
function importedFile(from, specifier) {
  const kit = KIT.exec(specifier);
  return kit ? join(root, 'testing', 'kit', 'src', `${kit[1]}.ts`) : resolve(dirname(from), specifier.replace(/\.js$/, '.ts'));
}

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
    const target = importedFile(file, m[1] ?? m[2]);
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
