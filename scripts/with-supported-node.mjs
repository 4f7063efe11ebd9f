// Runs a command under a Node.js line that package.json "engines" claims. When the Node running
// this script is such a line, the command runs as is; otherwise (an end-of-life Node 20 machine,
// say) it runs with the main line of scripts/node-releases.json, fetched once into the cache,
// first on PATH, so every `node` and `npm` the command starts is that one. This keeps the
// README's `npm ci && npm test` the only set-up a fresh machine needs.
//
//   node scripts/with-supported-node.mjs npm run test:all   run a command
//   node scripts/with-supported-node.mjs --bin-dir          print the folder to put first on PATH
import { spawnSync } from 'node:child_process';
import { dirname, delimiter } from 'node:path';
import { claimedMajors, ensureNode, nodeReleases, rootEngines } from './node-cache.mjs';

const engines = rootEngines();
const current = Number(process.versions.node.split('.')[0]);
const supported = claimedMajors(engines).includes(current);

function supportedBinDir() {
  if (supported) return dirname(process.execPath);
  const { main, releases } = nodeReleases();
  // Set on the way in: a second pass with an unsupported Node means PATH did not take effect.
  if (process.env.ESO_MTLS_SUPPORTED_NODE) {
    throw new Error(
      `with-supported-node: still on Node ${process.versions.node} after putting ${process.env.ESO_MTLS_SUPPORTED_NODE} first on PATH; is 'node' an alias or a shell function?`,
    );
  }
  console.error(`with-supported-node: Node ${process.versions.node} is not a line package.json "engines" claims (${engines}); using Node ${releases[main]}`);
  return ensureNode(releases[main]);
}

const args = process.argv.slice(2);
if (args.length === 0) {
  console.error('usage: node scripts/with-supported-node.mjs (--bin-dir | COMMAND [ARGS...])');
  process.exit(2);
}
const binDir = supportedBinDir();
if (args[0] === '--bin-dir') {
  console.log(binDir);
  process.exit(0);
}
const env = supported ? process.env : { ...process.env, PATH: `${binDir}${delimiter}${process.env.PATH ?? ''}`, ESO_MTLS_SUPPORTED_NODE: binDir };
const run = spawnSync(args[0], args.slice(1), { stdio: 'inherit', env });
if (run.error) {
  console.error(`with-supported-node: could not start '${args[0]}': ${run.error.message}`);
  process.exit(127);
}
process.exit(run.status ?? 1);
