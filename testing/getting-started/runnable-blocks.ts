import { codeBlocks } from '../docs/markdown-blocks.js';

// The runnable blocks of a Markdown page: fenced code whose info string is `sh test` (run to
// completion, must exit 0) or `sh test-background` (a long-running command, such as a server, left
// running while the next blocks run), and code of any language marked `file=NAME` (a file the
// page tells the reader to save as NAME, e.g. ```` ```ts file=provider.ts ````). Attributes after the tag, e.g. `timeout=600` (seconds) or
// `ready="text"` (a background block is ready once its output shows the text), sit in the info
// string, which renderers do not show: the page reads naturally and the test knows what to do.

/** One block to run. */
export interface RunnableBlock {
  readonly mode: 'foreground' | 'background' | 'file';
  readonly script: string;
  /** 1-based line of the opening fence, for messages. */
  readonly line: number;
  /** Seconds: how long a foreground block may run, or a background block may take to be ready. */
  readonly timeoutSeconds: number;
  /** Text the background block's output shows once it is ready. */
  readonly ready?: string;
  /** Where a `file=` block is saved, relative to the working folder: a name, or a folder and a name. */
  readonly file?: string;
}

// A plain name in the working folder or in one folder of it (`.eso-mtls-dev/provider.ts`), never
// `..`: a page cannot write elsewhere.
const FILE_NAME = /^(?:(?!\.\.?\/)[A-Za-z0-9._-]+\/)?[A-Za-z0-9][A-Za-z0-9._-]*$/;

const ATTRIBUTE = /([a-z-]+)=(?:"([^"]*)"|(\S+))/g;

/** The runnable blocks of `markdown`, in page order. Throws, naming the line, on a tag or attribute it does not know. */
export function runnableBlocks(markdown: string, defaultTimeoutSeconds = 120): RunnableBlock[] {
  const blocks: RunnableBlock[] = [];
  for (const block of codeBlocks(markdown, 'page')) {
    const [tag, ...rest] = block.flags;
    const where = `line ${block.line}`;
    const file = block.flags.find((f) => f.startsWith('file='))?.slice('file='.length);
    if (file !== undefined) {
      if (!FILE_NAME.test(file)) throw new Error(`${where}: file=${file} is not a plain file name (NAME or FOLDER/NAME)`);
      blocks.push({ mode: 'file', script: block.code, line: block.line, timeoutSeconds: defaultTimeoutSeconds, file });
      continue;
    }
    if (block.language !== 'sh' || (tag !== 'test' && tag !== 'test-background')) continue;
    const attributes = new Map([...rest.join(' ').matchAll(ATTRIBUTE)].map((m) => [m[1]!, m[2] ?? m[3]!]));
    for (const name of attributes.keys()) {
      if (name !== 'timeout' && name !== 'ready') throw new Error(`${where}: unknown attribute ${name}= (known: timeout=, ready=)`);
    }
    const timeout = attributes.get('timeout');
    if (timeout !== undefined && !/^[1-9]\d*$/.test(timeout)) throw new Error(`${where}: timeout=${timeout} is not a whole number of seconds`);
    const ready = attributes.get('ready');
    if (ready !== undefined && tag !== 'test-background') throw new Error(`${where}: ready= belongs to test-background blocks only`);
    blocks.push({
      mode: tag === 'test' ? 'foreground' : 'background',
      script: block.code,
      line: block.line,
      timeoutSeconds: timeout === undefined ? defaultTimeoutSeconds : Number(timeout),
      ...(ready === undefined ? {} : { ready }),
    });
  }
  return blocks;
}
