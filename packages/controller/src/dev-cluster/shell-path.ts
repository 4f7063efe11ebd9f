import { isAbsolute, relative } from 'node:path';

/** A path as the printed commands should spell it: relative to `cwd` when inside it, quoted for a POSIX shell when needed. */
export function shellPath(path: string, cwd: string): string {
  const rel = relative(cwd, path);
  return shellQuote(rel !== '' && !rel.startsWith('..') && !isAbsolute(rel) ? rel : path);
}

/** `word` as a POSIX shell reads it back: as is when plain, else in single quotes. */
export function shellQuote(word: string): string {
  return /^[A-Za-z0-9_./:=@%+-]+$/.test(word) ? word : `'${word.replaceAll("'", `'\\''`)}'`;
}
