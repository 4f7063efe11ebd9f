import { beforeAll, describe, expect, it } from '@jest/globals';
import { repoRoot as root } from '@eso-mtls/test-kit/repo';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { type ImportGraph, importGraph, reachable } from './import-graph.js';
import { markdownFiles } from './markdown-files.js';
import { brokenLink, fileLinks, headingAnchors } from './markdown-links.js';

// Every link of the docs and READMEs to a file of the repository names a file that exists, and
// every #anchor into a Markdown page (a bare one into its own) one of that page's headings, so a file moved or renamed, or
// a heading reworded, fails here instead of leaving a page pointing at nothing. docs/architecture.md
// is the map of the code (issue 26 item 7): its reading order must also have no loops, no source
// file it names importing, directly or through others, one it names later.

const ARCHITECTURE = 'docs/architecture.md';
const READING_ORDER = '## A reading order';

const read = (file: string): string => readFileSync(join(root, file), 'utf8');

/** The text of `page` from `heading` to the next heading of the same level. */
function section(page: string, heading: string): string {
  const start = page.indexOf(`\n${heading}\n`);
  if (start < 0) throw new Error(`${ARCHITECTURE} has no heading "${heading}": the reading order was renamed or lost`);
  const end = page.indexOf('\n## ', start + heading.length + 2);
  return page.slice(start, end < 0 ? undefined : end);
}

describe(`links of ${markdownFiles(root).length} Markdown files (docs/, README.md, packages/*/README.md, examples/*/README.md)`, () => {
  const links = markdownFiles(root).flatMap((f) => fileLinks(read(f), f, root));

  it(`name files and headings that exist (${links.length} links)`, () => {
    expect(links.flatMap((l) => brokenLink(l, root) ?? [])).toEqual([]);
  });
});

describe(ARCHITECTURE, () => {
  const links = fileLinks(read(ARCHITECTURE), ARCHITECTURE, root);

  it(`is among the pages checked, with its links found (${links.length})`, () => {
    expect(markdownFiles(root)).toContain(ARCHITECTURE);
    // Not silently empty: the map links every package's entry point and many files besides.
    expect(links.length).toBeGreaterThan(100);
  });

  describe('its reading order', () => {
    let graph: ImportGraph;
    const named = fileLinks(section(read(ARCHITECTURE), READING_ORDER), ARCHITECTURE, root)
      .map((l) => l.path)
      .filter((p) => /^packages\/[^/]+\/src\/.*\.ts$/.test(p));

    beforeAll(() => {
      graph = importGraph(root);
    }, 120_000);

    it(`names source files the import graph knows (${named.length})`, () => {
      expect(named.length).toBeGreaterThan(20);
      expect(named.filter((f) => !graph.has(f))).toEqual([]);
    });

    it('has no loops: no file needs one named after it', () => {
      const loops = named.flatMap((file, i) => {
        const needs = reachable(graph, file);
        return named.slice(i + 1).flatMap((later) => (needs.has(later) ? [`${file} imports ${later}, which the order names after it`] : []));
      });
      expect(loops).toEqual([]);
    });
  });
});

describe('the link check itself', () => {
  const page = [
    '# A page',
    '',
    '## Two words',
    '',
    'See [the map](docs/architecture.md#packages), [the core](packages/core/src/index.ts) and [a URL](https://example.com).',
    'A [missing file](docs/no-such-page.md), a [missing heading](docs/architecture.md#no-such-heading) and [this page](#install).',
    'A [heading of this page that is not](#no-such-section).',
    '`[in code](docs/not-checked.md)` is code.',
    '',
    '```md',
    '[in a fence](docs/not-checked-either.md)',
    '```',
    '',
    '[ref]: docs/no-such-reference.md',
  ].join('\n');
  // Read as the repository's README.md, so that a bare #anchor names one of that page's headings.
  const links = fileLinks(page, 'README.md', root);

  it('reads inline links, bare anchors (into the page itself) and reference definitions, not URLs, code spans or fences', () => {
    expect(links.map((l) => [l.line, l.path, l.anchor])).toEqual([
      [5, 'docs/architecture.md', 'packages'],
      [5, 'packages/core/src/index.ts', undefined],
      [6, 'docs/no-such-page.md', undefined],
      [6, 'docs/architecture.md', 'no-such-heading'],
      [6, 'README.md', 'install'],
      [7, 'README.md', 'no-such-section'],
      [14, 'docs/no-such-reference.md', undefined],
    ]);
  });

  it('reports a missing file and a missing heading, each with its line', () => {
    expect(links.flatMap((l) => brokenLink(l, root) ?? [])).toEqual([
      'README.md:6: (docs/no-such-page.md) names docs/no-such-page.md, which does not exist',
      'README.md:6: (docs/architecture.md#no-such-heading) names #no-such-heading, which is no heading of docs/architecture.md',
      'README.md:7: (#no-such-section) names #no-such-section, which is no heading of README.md',
      'README.md:14: (docs/no-such-reference.md) names docs/no-such-reference.md, which does not exist',
    ]);
  });

  it('names headings as GitHub does (punctuation dropped, code kept, repeats numbered)', () => {
    const anchors = headingAnchors('# Rotation timeline chart (`--chart`)\n## The CA, emergency (hard cut-over)\n## Tests\n## Tests\n', 'x.md');
    expect([...anchors]).toEqual(['rotation-timeline-chart---chart', 'the-ca-emergency-hard-cut-over', 'tests', 'tests-1']);
  });
});
