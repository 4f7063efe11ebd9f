import { existsSync, readFileSync } from 'node:fs';
import { dirname, extname, join, relative, resolve } from 'node:path';
import { codeBlocks } from './markdown-blocks.js';

/** One link of a Markdown file to a path of the repository, or to a heading of its own page (a bare `#anchor`); a URL is not one. */
export interface FileLink {
  /** The Markdown file, repository-relative. */
  readonly file: string;
  /** 1-based line of the link. */
  readonly line: number;
  /** The target as written, e.g. `../packages/core/src/index.ts` or `operations.md#alerts`. */
  readonly target: string;
  /** The path it names, repository-relative, without its `#anchor`. */
  readonly path: string;
  /** The `#anchor` without the `#`, if any. */
  readonly anchor: string | undefined;
}

// [text](target) and [text](target "title"); the text may hold `code` and escaped brackets.
const INLINE = /!?\[(?:[^\]\\]|\\.)*\]\(\s*<?([^)\s>]+)>?(?:\s+"[^"]*")?\s*\)/g;
// [label]: target, a reference definition on a line of its own.
const DEFINITION = /^ {0,3}\[[^\]]+\]:\s*<?([^\s>]+)>?/;
// A URL (https:, mailto:...) names nothing in the repository.
const SCHEME = /^[a-z][a-z0-9+.-]*:/i;

/**
 * The links of `markdown` (the repository-relative `file` under `root`) to repository paths, in
 * order: inline links and reference definitions outside fenced code blocks and `code spans`.
 * A target starting with `/` is read from the repository root, as GitHub reads it.
 */
export function fileLinks(markdown: string, file: string, root: string): FileLink[] {
  const lines = markdown.split(/\r?\n/);
  const fenced = fencedLines(markdown, file);
  const links: FileLink[] = [];
  lines.forEach((text, i) => {
    if (fenced.has(i + 1)) return;
    const spans = codeSpans(text);
    const targets = [...text.matchAll(INLINE)].filter((m) => !spans.some(([from, to]) => m.index >= from && m.index < to)).map((m) => m[1]!);
    const definition = DEFINITION.exec(text);
    if (definition) targets.push(definition[1]!);
    for (const target of targets) {
      if (SCHEME.test(target)) continue;
      const [withoutAnchor = '', anchor] = target.split('#', 2) as [string, string | undefined];
      const pathPart = decodeURI(withoutAnchor.split('?')[0]!);
      // A bare #anchor names a heading of this page.
      const absolute = pathPart === '' ? join(root, file) : pathPart.startsWith('/') ? join(root, pathPart) : resolve(root, dirname(file), pathPart);
      links.push({ file, line: i + 1, target, path: relative(root, absolute), anchor: anchor || undefined });
    }
  });
  return links;
}

/**
 * What is wrong with `link`: its path does not exist, or it names a heading its Markdown file does
 * not have; undefined when it is good. A path outside the repository is wrong too.
 */
export function brokenLink(link: FileLink, root: string): string | undefined {
  const where = `${link.file}:${link.line}: (${link.target})`;
  if (link.path.startsWith('..')) return `${where} points outside the repository`;
  const absolute = join(root, link.path);
  if (!existsSync(absolute)) return `${where} names ${link.path}, which does not exist`;
  if (link.anchor === undefined || extname(link.path) !== '.md') return undefined;
  const anchors = headingAnchors(readFileSync(absolute, 'utf8'), link.path);
  return anchors.has(link.anchor) ? undefined : `${where} names #${link.anchor}, which is no heading of ${link.path}`;
}

/** The anchors GitHub gives the headings of a Markdown file: lower case, punctuation dropped, spaces as `-`, repeats numbered. */
export function headingAnchors(markdown: string, file: string): Set<string> {
  const fenced = fencedLines(markdown, file);
  const anchors = new Set<string>();
  const seen = new Map<string, number>();
  markdown.split(/\r?\n/).forEach((text, i) => {
    const heading = /^ {0,3}#{1,6}\s+(.*?)\s*#*\s*$/.exec(text);
    if (!heading || fenced.has(i + 1)) return;
    const slug = heading[1]!
      .replace(/\[([^\]]*)\]\([^)]*\)/g, '$1')
      .toLowerCase()
      .replace(/[^\p{L}\p{N}\s_-]/gu, '')
      .replace(/\s/g, '-');
    const count = seen.get(slug) ?? 0;
    seen.set(slug, count + 1);
    anchors.add(count === 0 ? slug : `${slug}-${count}`);
  });
  return anchors;
}

/** Line numbers inside fenced code blocks, fences included. */
function fencedLines(markdown: string, file: string): Set<number> {
  const lines = new Set<number>();
  for (const block of codeBlocks(markdown, file)) {
    const last = block.line + block.code.split('\n').length + 1;
    for (let n = block.line; n <= last; n++) lines.add(n);
  }
  return lines;
}

/** [start, end) of each `code span` of a line. */
function codeSpans(text: string): [number, number][] {
  return [...text.matchAll(/(`+)[^`]*?\1/g)].map((m) => [m.index, m.index + m[0].length]);
}
