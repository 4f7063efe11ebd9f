/** One fenced code block of a Markdown file. */
export interface CodeBlock {
  /** The Markdown file, as given to {@link codeBlocks} (repository-relative in the tests). */
  readonly file: string;
  /** 1-based line of the opening fence. */
  readonly line: number;
  /** First word of the info string (`ts`, `sh`...), lower-cased; '' for a bare fence. */
  readonly language: string;
  /** The words after the language, e.g. `fragment` in ```` ```ts fragment ````. */
  readonly flags: readonly string[];
  /** The block's text, the fence's indentation removed, lines joined with '\n'. */
  readonly code: string;
}

/** An opening or closing fence: up to any indentation (fences sit inside list items too), 3+ backticks or tildes. */
const FENCE = /^(\s*)(`{3,}|~{3,})(.*)$/;

/**
 * The fenced code blocks of `markdown`, in order, as CommonMark reads them: a block ends at a fence
 * of the same character at least as long as the one that opened it, with nothing after it, or at
 * the end of the file. Indented (four-space) code blocks are not fences and are not returned.
 */
export function codeBlocks(markdown: string, file: string): CodeBlock[] {
  const lines = markdown.split(/\r?\n/);
  const blocks: CodeBlock[] = [];
  for (let i = 0; i < lines.length; i++) {
    const open = FENCE.exec(lines[i]!);
    if (!open) continue;
    const [, indent, fence, info] = open as unknown as [string, string, string, string];
    // A backtick fence's info string may not contain a backtick: that is inline code, not a fence.
    if (fence[0] === '`' && info.includes('`')) continue;
    const body: string[] = [];
    let j = i + 1;
    for (; j < lines.length; j++) {
      const close = FENCE.exec(lines[j]!);
      if (close && close[2]![0] === fence[0] && close[2]!.length >= fence.length && close[3]!.trim() === '') break;
      body.push(stripIndent(lines[j]!, indent.length));
    }
    const [language = '', ...flags] = info
      .trim()
      .split(/\s+/)
      .filter((w) => w !== '');
    blocks.push({ file, line: i + 1, language: language.toLowerCase(), flags, code: body.join('\n') });
    i = j;
  }
  return blocks;
}

/** Removes up to `width` leading spaces: the content of a fenced block inside a list item is indented like its fence. */
function stripIndent(line: string, width: number): string {
  let n = 0;
  while (n < width && line[n] === ' ') n++;
  return line.slice(n);
}
