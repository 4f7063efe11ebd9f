// The Go code the docs show is the tested code: each ```go fence of docs/provider-developers.md
// and docs/eso-integration.md is tied to a region of a file in testing/go-interop by the comment
// line before it, and must equal it byte for byte (less the region's common indentation).
import { describe, expect, it } from '@jest/globals';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { GO_INTEROP_DIR } from './support/go-interop.js';

const DOCS = fileURLToPath(new URL('../../../docs/', import.meta.url));

describe('the Go code shown in the docs is the tested code', () => {
  // A fence is tied to its source by the comment line before it: <!-- go: testing/go-interop/<file>#<region> -->
  const MARKER = /<!-- go: testing\/go-interop\/(\S+)#(\S+) -->\n```go\n([\s\S]*?)```/g;

  function region(file: string, name: string): string {
    const text = readFileSync(join(GO_INTEROP_DIR, file), 'utf8');
    const m = new RegExp(`\\n[\\t ]*// doc:begin ${name}\\n([\\s\\S]*?)\\n[\\t ]*// doc:end ${name}\\n`).exec(text);
    if (!m) throw new Error(`${file} has no region ${name} (// doc:begin ${name} ... // doc:end ${name})`);
    const lines = m[1]!.replace(/^\n+|\n+$/g, '').split('\n');
    const indent = Math.min(...lines.filter((l) => l.trim() !== '').map((l) => /^\t*/.exec(l)![0].length));
    return `${lines.map((l) => l.slice(indent)).join('\n')}\n`;
  }

  it.each(['provider-developers.md', 'eso-integration.md'])('%s: every ```go fence equals its marked region', (doc) => {
    const text = readFileSync(join(DOCS, doc), 'utf8');
    const fences = text.match(/```go\n/g) ?? [];
    const marked = [...text.matchAll(MARKER)];
    expect(fences.length).toBeGreaterThan(0);
    expect(marked).toHaveLength(fences.length);
    for (const [, file, name, body] of marked) expect({ file, name, body }).toEqual({ file, name, body: region(file!, name!) });
  });
});
