import { join, relative } from 'node:path';
import ts from 'typescript';
import type { CodeBlock } from './markdown-blocks.js';

/** What the compiler said about one snippet, located in its Markdown file. */
export interface SnippetDiagnostic {
  /** `file.md:line: message`, the line being the Markdown line the message is about. */
  readonly text: string;
}

/**
 * Folder the snippets pretend to live in: inside the repository, so every import (prom-client,
 * @grpc/grpc-js...) resolves through its node_modules as in a user's project. The files exist only
 * in memory: nothing is left behind for tsc, eslint or knip to find.
 */
const SNIPPET_FOLDER = '.doc-snippets';

/**
 * Type-checks each block as its own ES module with the repository's strict settings
 * (tsconfig.base.json; skipLibCheck stays on here, the packaging test checks it off). `@eso-mtls/*`
 * resolves to the packages' sources, as in jest and the root tsconfig, so no build is needed and
 * the snippets are checked against the code as it is now; the packaging test checks the built
 * packages as installed. Returns the diagnostics of each block, with Markdown file:line positions;
 * an empty list means it compiles.
 */
export function typeCheckSnippets(root: string, blocks: readonly CodeBlock[]): Map<CodeBlock, SnippetDiagnostic[]> {
  const options = compilerOptions(root);
  const byPath = new Map<string, CodeBlock>();
  blocks.forEach((b, i) => byPath.set(join(root, SNIPPET_FOLDER, `${i}-${b.file.replace(/[^A-Za-z0-9]+/g, '_')}-L${b.line}.ts`), b));

  const host = ts.createCompilerHost(options, true);
  const { fileExists, readFile, getSourceFile } = host;
  host.fileExists = (f) => byPath.has(f) || fileExists.call(host, f);
  host.readFile = (f) => byPath.get(f)?.code ?? readFile.call(host, f);
  host.getSourceFile = (f, language, onError, create) => {
    const block = byPath.get(f);
    return block ? ts.createSourceFile(f, block.code, language, true, ts.ScriptKind.TS) : getSourceFile.call(host, f, language, onError, create);
  };
  const program = ts.createProgram({ rootNames: [...byPath.keys()], options, host });

  const result = new Map<CodeBlock, SnippetDiagnostic[]>(blocks.map((b) => [b, []]));
  for (const d of program.getOptionsDiagnostics()) {
    for (const list of result.values()) list.push({ text: `compiler options: ${ts.flattenDiagnosticMessageText(d.messageText, '\n')}` });
  }
  for (const [path, block] of byPath) {
    const file = program.getSourceFile(path)!;
    const diagnostics = [...program.getSyntacticDiagnostics(file), ...program.getSemanticDiagnostics(file)];
    result.get(block)!.push(...diagnostics.map((d) => locate(root, block, d)));
  }
  return result;
}

/** The house settings, made to check without emitting; every snippet is a module (top-level await and imports work). */
function compilerOptions(root: string): ts.CompilerOptions {
  const configPath = join(root, 'tsconfig.base.json');
  const read = ts.readConfigFile(configPath, ts.sys.readFile);
  if (read.error) throw new Error(`${configPath}: ${ts.flattenDiagnosticMessageText(read.error.messageText, '\n')}`);
  const parsed = ts.parseJsonConfigFileContent(read.config, ts.sys, root, undefined, configPath);
  return {
    ...parsed.options,
    noEmit: true,
    declaration: false,
    declarationMap: false,
    sourceMap: false,
    skipLibCheck: true,
    moduleDetection: ts.ModuleDetectionKind.Force,
    paths: {
      '@eso-mtls/core/node': [join(root, 'packages/core/src/node/index.ts')],
      '@eso-mtls/*': [join(root, 'packages/*/src/index.ts')],
    },
  };
}

/** `docs/x.md:12: TS2304 Cannot find name 'credentials'.` for a diagnostic at line 12 of the Markdown file. */
function locate(root: string, block: CodeBlock, d: ts.Diagnostic): SnippetDiagnostic {
  const message = `TS${d.code} ${ts.flattenDiagnosticMessageText(d.messageText, '\n')}`;
  if (d.file === undefined || d.start === undefined) return { text: `${block.file}:${block.line}: ${message}` };
  if (!d.file.fileName.includes(SNIPPET_FOLDER)) {
    return { text: `${block.file}:${block.line}: in ${relative(root, d.file.fileName)}: ${message}` };
  }
  const { line, character } = d.file.getLineAndCharacterOfPosition(d.start);
  // The code starts on the line after the opening fence.
  return { text: `${block.file}:${block.line + 1 + line}:${character + 1}: ${message}` };
}
