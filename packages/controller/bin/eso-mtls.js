#!/usr/bin/env node
// The `eso-mtls` command's launcher. It is committed, not built, because npm links a package's
// "bin" only if the file exists at install time, and in a clone `npm ci` links before the root
// `prepare` script builds dist/. The command itself is src/bin/eso-mtls.ts, compiled to dist/.
const entry = new URL('../dist/bin/eso-mtls.js', import.meta.url);
try {
  await import(entry.href);
} catch (e) {
  if (e?.code !== 'ERR_MODULE_NOT_FOUND' || !String(e.message).includes(entry.pathname)) throw e;
  process.stderr.write(`eso-mtls: ${entry.pathname} is not built; run \`npm run build\` in the clone (npm ci runs it too)\n`);
  process.exitCode = 1;
}
