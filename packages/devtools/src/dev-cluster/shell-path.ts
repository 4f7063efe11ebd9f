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

/**
 * How the printed next steps spell paths: `here` relative to where the reader is (`cwd`); `cd` the
 * step into the repository's root when that is elsewhere; `fromRoot` relative to where the
 * commands after that `cd` run.
 */
export function nextStepPaths(
  cwd: string,
  repositoryRoot: string,
): {
  readonly here: (path: string) => string;
  readonly cd: readonly string[];
  readonly fromRoot: (path: string) => string;
} {
  const cd = relative(cwd, repositoryRoot) === '' ? [] : [`cd ${shellPath(repositoryRoot, cwd)}`];
  return { here: (path) => shellPath(path, cwd), cd, fromRoot: (path) => shellPath(path, cd.length === 0 ? cwd : repositoryRoot) };
}
