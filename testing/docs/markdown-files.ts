import { existsSync, readdirSync } from 'node:fs';
import { join } from 'node:path';

/** The Markdown pages a reader follows under `root`: README.md, docs/*.md, and the READMEs of packages/* and examples/*; repository-relative, sorted. */
export function markdownFiles(root: string): string[] {
  const inFolder = (dir: string): string[] =>
    existsSync(join(root, dir))
      ? readdirSync(join(root, dir))
          .filter((f) => f.endsWith('.md'))
          .map((f) => `${dir}/${f}`)
      : [];
  const readmes = (dir: string): string[] =>
    readdirSync(join(root, dir))
      .map((p) => `${dir}/${p}/README.md`)
      .filter((f) => existsSync(join(root, f)));
  return ['README.md', ...inFolder('docs'), ...readmes('packages'), ...readmes('examples')].sort();
}
