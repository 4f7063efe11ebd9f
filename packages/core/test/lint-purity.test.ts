import { fileURLToPath } from 'node:url';
import { beforeAll, describe, expect, it } from '@jest/globals';
import { ESLint } from 'eslint';

// The repository's own eslint.config.js, run through ESLint's Node API on fixture sources placed
// (virtually) under packages/core/src: each impure construct must be reported.
const root = fileURLToPath(new URL('../../../', import.meta.url));
let eslint: ESLint;
beforeAll(() => {
  eslint = new ESLint({ cwd: root });
});

async function purityMessages(code: string, filePath: string): Promise<string[]> {
  const [result] = await eslint.lintText(code, { filePath });
  return result!.messages
    .filter((m) => ['no-restricted-globals', 'no-restricted-syntax', 'no-restricted-imports'].includes(m.ruleId ?? ''))
    .map((m) => `${m.ruleId}: ${m.message}`);
}

const forbidden: [string, string, RegExp][] = [
  ['process', 'export const argv = process.argv;', /global 'process'/],
  ['process.env', 'export const home = process.env.HOME;', /global 'process'/],
  ['process.getBuiltinModule', "export const fs = process.getBuiltinModule('node:fs');", /global 'process'/],
  ['fetch', "export const get = () => fetch('http://127.0.0.1/');", /global 'fetch'/],
  ['setTimeout', 'export const later = (f: () => void) => setTimeout(f, 1);', /global 'setTimeout'/],
  ['setInterval', 'export const tick = (f: () => void) => setInterval(f, 1);', /global 'setInterval'/],
  ['performance', 'export const t = () => performance.now();', /global 'performance'/],
  ['dynamic import()', "export const load = () => import('./names.js');", /No dynamic import\(\)/],
  ['Date.now()', 'export const now = () => Date.now();', /No Date\.now\(\)/],
  ['new Date() without an argument', 'export const now = () => new Date();', /No new Date\(\) without an argument/],
  ['Math.random', 'export const r = () => Math.random();', /No Math\.random/],
  ['globalThis.crypto', 'export const c = () => globalThis.crypto.getRandomValues(new Uint8Array(8));', /No globalThis/],
  ['the global crypto', 'export const c = () => crypto.randomUUID();', /global 'crypto'/],
  ['an import of node:fs', "import { readFileSync } from 'node:fs';\nexport const read = readFileSync;", /may import only the X\.509\/ASN\.1 libraries/],
  ['an import of node:crypto', "import { randomBytes } from 'node:crypto';\nexport const r = randomBytes;", /may import only/],
];

describe('the purity lint of packages/core/src', () => {
  it.each(forbidden)('reports %s', async (_what, code, expected) => {
    const messages = await purityMessages(code, 'packages/core/src/fixture.ts');
    expect(messages).toEqual([expect.stringMatching(expected)]);
  });

  it('accepts what the core may do: its own files, the X.509 libraries, Date with an argument', async () => {
    const code = [
      "import { Certificate } from '@peculiar/asn1-x509';",
      "import { days } from './time.js';",
      'export const at = (t: number): string => new Date(t + days(1)).toISOString();',
      'export const parse = (s: string): number => Date.parse(s);',
      'export { Certificate };',
    ].join('\n');
    expect(await purityMessages(code, 'packages/core/src/fixture.ts')).toEqual([]);
  });

  it('exempts the src/node/ entry point, and other packages', async () => {
    for (const [, code] of forbidden) {
      expect(await purityMessages(code, 'packages/core/src/node/fixture.ts')).toEqual([]);
      expect(await purityMessages(code, 'packages/controller/src/fixture.ts')).toEqual([]);
    }
  });
});
