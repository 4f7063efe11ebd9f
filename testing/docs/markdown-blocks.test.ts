import { describe, expect, it } from '@jest/globals';
import { codeBlocks } from './markdown-blocks.js';

describe('codeBlocks', () => {
  it('returns each fenced block with its line, language, flags and text', () => {
    const md = ['# Title', '', '```ts', 'const a = 1;', '```', 'text', '~~~sh run', 'echo hi', '~~~', '```', 'bare', '```'].join('\n');
    expect(codeBlocks(md, 'x.md')).toEqual([
      { file: 'x.md', line: 3, language: 'ts', flags: [], code: 'const a = 1;' },
      { file: 'x.md', line: 7, language: 'sh', flags: ['run'], code: 'echo hi' },
      { file: 'x.md', line: 10, language: '', flags: [], code: 'bare' },
    ]);
  });

  it('ends a block only at a fence of the same character, at least as long, with nothing after it', () => {
    const md = ['````md', '```ts', 'inner', '```', '~~~', '````', '```TypeScript fragment', 'x', '``` not a close', '```'].join('\n');
    expect(codeBlocks(md, 'x.md').map((b) => [b.line, b.language, b.flags, b.code])).toEqual([
      [1, 'md', [], '```ts\ninner\n```\n~~~'],
      [7, 'typescript', ['fragment'], 'x\n``` not a close'],
    ]);
  });

  it('reads fences inside list items, removing their indentation, and ignores inline code and an unclosed fence at the end', () => {
    const md = ['- step:', '', '  ```sh', '  npm ci', '    indented more', '  ```', 'Use ```ts x``` inline.', '```yaml', 'a: 1'].join('\n');
    expect(codeBlocks(md, 'x.md').map((b) => [b.line, b.language, b.code])).toEqual([
      [3, 'sh', 'npm ci\n  indented more'],
      [8, 'yaml', 'a: 1'],
    ]);
  });
});
