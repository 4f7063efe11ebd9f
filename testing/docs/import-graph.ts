import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';

/** Each source file of packages/&#42;/src and the repository files it imports (type-only imports included). */
export type ImportGraph = ReadonlyMap<string, readonly string[]>;

interface CruiseResult {
  readonly modules: readonly { readonly source: string; readonly dependencies: readonly { readonly resolved: string }[] }[];
}

/**
 * The import graph `npm run lint:cycles` checks, from the same dependency-cruiser and the same
 * configuration (.dependency-cruiser.mjs), so the docs and the circle check read one graph.
 */
export function importGraph(root: string): ImportGraph {
  // The root's devDependency; its package exports hide package.json from require.resolve.
  const manifest = join(root, 'node_modules', 'dependency-cruiser', 'package.json');
  const { bin } = JSON.parse(readFileSync(manifest, 'utf8')) as { bin: Record<string, string> };
  const cli = join(dirname(manifest), bin['depcruise']!);
  const json = execFileSync(process.execPath, [cli, '--config', '.dependency-cruiser.mjs', '--output-type', 'json', 'packages/*/src'], {
    cwd: root,
    encoding: 'utf8',
    maxBuffer: 256 * 1024 * 1024,
  });
  const result = JSON.parse(json) as CruiseResult;
  return new Map(result.modules.map((m) => [m.source, m.dependencies.map((d) => d.resolved)]));
}

/** Every file `file` reaches through its imports, itself excluded. */
export function reachable(graph: ImportGraph, file: string): Set<string> {
  const seen = new Set<string>();
  const stack = [...(graph.get(file) ?? [])];
  while (stack.length > 0) {
    const next = stack.pop()!;
    if (seen.has(next) || next === file) continue;
    seen.add(next);
    stack.push(...(graph.get(next) ?? []));
  }
  return seen;
}
