// Module hooks that run TypeScript sources: synchronous, so they serve both module.registerHooks
// (in-thread) and module.register (off-thread, which also accepts plain return values).
import { existsSync, readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { transformSync } from '@swc/core';

const workspace = new URL('../packages/', import.meta.url);

export function resolve(specifier, context, next) {
  // Workspace packages resolve to their sources, as in jest and tsc; the test kit is only sources.
  const kit = /^@eso-mtls\/test-kit\/([a-z-]+)$/.exec(specifier);
  if (kit) return { url: new URL(`../testing/kit/src/${kit[1]}.ts`, import.meta.url).href, shortCircuit: true };
  // A subpath entry point (@eso-mtls/core/node, @eso-mtls/devtools/cluster) is its folder's index.
  const ws = /^@eso-mtls\/([a-z-]+)(?:\/(node|cluster))?$/.exec(specifier);
  if (ws) {
    const entry = ws[2] ? `${ws[1]}/src/${ws[2]}/index.ts` : `${ws[1]}/src/index.ts`;
    return { url: new URL(entry, workspace).href, shortCircuit: true };
  }
  if (specifier.endsWith('.js') && context.parentURL?.endsWith('.ts') && specifier.startsWith('.')) {
    const ts = new URL(specifier.replace(/\.js$/, '.ts'), context.parentURL);
    if (existsSync(fileURLToPath(ts))) return { url: ts.href, shortCircuit: true };
  }
  return next(specifier, context);
}

export function load(url, context, next) {
  if (!url.endsWith('.ts')) return next(url, context);
  const { code } = transformSync(readFileSync(fileURLToPath(url), 'utf8'), {
    filename: fileURLToPath(url),
    jsc: { parser: { syntax: 'typescript' }, target: 'es2022' },
    module: { type: 'es6' },
    sourceMaps: 'inline',
  });
  return { format: 'module', source: code, shortCircuit: true };
}
