// Checks (default) or rewrites (--update) each package's API report with @microsoft/api-extractor.
// Reads the built declarations: run `npm run build` first. A report that differs from the build fails the
// check, so a change to a package's public surface shows in review as a diff of packages/*/etc/*.api.md.
import { mkdirSync, readdirSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { Extractor, ExtractorConfig } from '@microsoft/api-extractor';

const root = resolve(import.meta.dirname, '..');
const update = process.argv.includes('--update');
const configs = readdirSync(join(root, 'packages')).flatMap((pkg) =>
  readdirSync(join(root, 'packages', pkg))
    .filter((f) => /^api-extractor(\.[a-z-]+)?\.json$/.test(f))
    .map((f) => join(root, 'packages', pkg, f)),
);

let failed = 0;
for (const file of configs.sort()) {
  const config = ExtractorConfig.loadFileAndPrepare(file);
  mkdirSync(config.reportFolder, { recursive: true });
  const result = Extractor.invoke(config, { localBuild: update, showVerboseMessages: false });
  const name = file.slice(root.length + 1);
  if (result.succeeded) continue;
  failed++;
  const why = result.apiReportChanged
    ? `the public API differs from ${config.reportFilePath.slice(root.length + 1)}; if the change is intended, run \`npm run api:update\` and commit the report`
    : `${result.errorCount} errors, ${result.warningCount} warnings above`;
  console.error(`api-extractor ${name}: ${why}`);
}
if (failed > 0) process.exit(1);
console.log(`${configs.length} API reports ${update ? 'written' : 'match the build'}`);
