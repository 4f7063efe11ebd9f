import { beforeAll, describe, expect, it } from '@jest/globals';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { type CodeBlock, codeBlocks } from './markdown-blocks.js';
import { markdownFiles } from './markdown-files.js';
import { type SnippetDiagnostic, typeCheckSnippets } from './type-check-snippets.js';

// Every snippet in the docs and READMEs either compiles here or says what it is: a language tag
// that is not TypeScript (sh, yaml, go, console, text...) or, for a deliberately partial piece of
// TypeScript such as a signature summary, ```ts fragment. Fragments are counted in a test's name.
// A block marked file=NAME (a file a runnable page saves, see testing/getting-started) compiles too.

const root = fileURLToPath(new URL('../../', import.meta.url));
const TYPESCRIPT = new Set(['ts', 'typescript']);
const FRAGMENT = 'fragment';

const files = markdownFiles(root);
const blocks: CodeBlock[] = files.flatMap((f) => codeBlocks(readFileSync(join(root, f), 'utf8'), f));
const typescript = blocks.filter((b) => TYPESCRIPT.has(b.language));
const fragments = typescript.filter((b) => b.flags.includes(FRAGMENT));
const compiled = typescript.filter((b) => !b.flags.includes(FRAGMENT));
const where = (b: CodeBlock): string => `${b.file}:${b.line}`;

describe(`code blocks of ${files.length} Markdown files (docs/, README.md, packages/*/README.md, examples/*/README.md)`, () => {
  let results: Map<CodeBlock, SnippetDiagnostic[]>;

  beforeAll(() => {
    results = typeCheckSnippets(root, compiled);
  }, 180_000);

  it('every fenced block names its language (ts, sh, yaml, console, text...)', () => {
    expect(blocks.filter((b) => b.language === '').map(where)).toEqual([]);
  });

  it(`TypeScript blocks carry no flag but "${FRAGMENT}" or file=NAME (${fragments.length} fragments, shown and not compiled: ${fragments.map(where).join(', ') || 'none'})`, () => {
    expect(typescript.filter((b) => b.flags.some((f) => f !== FRAGMENT && !f.startsWith('file='))).map((b) => `${where(b)}: ${b.flags.join(' ')}`)).toEqual([]);
  });

  it('finds the snippets of the package READMEs and the embedding guide (the extraction is not silently empty)', () => {
    const withCode = new Set(compiled.map((b) => b.file));
    for (const f of [
      'packages/grpc/README.md',
      'packages/kubernetes/README.md',
      'packages/metrics/README.md',
      'packages/core/README.md',
      'docs/embedding.md',
    ]) {
      expect([f, withCode.has(f)]).toEqual([f, true]);
    }
  });

  it.each(compiled.map((b) => [where(b), b] as const))('%s compiles', (_, block) => {
    const diagnostics = results.get(block)!.map((d) => d.text);
    if (diagnostics.length > 0) throw new Error(diagnostics.join('\n'));
  });
});
