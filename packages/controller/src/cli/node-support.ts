/**
 * The Node.js lines `eso-mtls` supports: package.json "engines.node", which npm only warns about
 * at install (and npx not at all). test/node-support.test.ts keeps the two equal.
 */
export const SUPPORTED_NODE = '^22.12.0 || ^24.0.0 || ^26.0.0';

const CARET = /^\^(\d+)\.(\d+)\.(\d+)$/;

/** Whether `version` (e.g. `20.20.2`, as `process.versions.node`) is in `range`, caret parts joined by `||`. */
export function isSupportedNode(version: string, range: string = SUPPORTED_NODE): boolean {
  const [major, minor, patch] = version.split('.').map(Number) as [number, number, number];
  return range.split('||').some((part) => {
    const m = CARET.exec(part.trim());
    if (m === null) throw new Error(`engines range part ${JSON.stringify(part.trim())} of ${JSON.stringify(range)} is not a caret range like ^24.0.0`);
    const [want, wantMinor, wantPatch] = [Number(m[1]), Number(m[2]), Number(m[3])];
    return major === want && (minor > wantMinor || (minor === wantMinor && patch >= wantPatch));
  });
}

/**
 * The one-line warning for running on `version` when it is not a supported line, else undefined.
 * A warning, not a refusal: most commands work on Node 20, only slower (simulate about 1.7 times).
 */
export function unsupportedNodeWarning(version: string): string | undefined {
  if (isSupportedNode(version)) return undefined;
  return `eso-mtls: warning: Node ${version} is not a supported line (${SUPPORTED_NODE}); it may fail or run slower. Use Node 24, e.g. \`npx -p node@24 eso-mtls ...\`\n`;
}
