// @ts-check
// `npm run lint:cycles`: no import circle inside a package's src/, type-only imports included (a type
// import is a circle of concepts all the same). An import of another package resolves to its
// src/index.ts (tsconfig.json paths), so a circle between packages fails too. Tests are not cruised.
//
// The folders of a package's src/ stack as a ladder, each importing only folders below it, so a
// reader can take them bottom up (docs/architecture.md, "A reading order"). A folder imports the
// folders named by its modules' imports, its subfolders' included; a folder's own subfolders are
// inside it, not imports of it.

/**
 * Folder loops that predate the folder rule, as `from` folder: the folders in its loops it may still
 * import. Each entry is a debt to pay by moving a module, not a place to add to: any other edge of a
 * folder loop fails.
 * @type {Record<string, readonly string[]>}
 */
const KNOWN_FOLDER_LOOPS = {
  // cli/ runs demo, dev-certs and status, which borrow its helpers (cli/terminal.ts, cli/args.ts);
  // dev-certs reuses demo's writer and loop.
  'packages/controller/src/cli': ['packages/controller/src/demo', 'packages/controller/src/dev-certs', 'packages/controller/src/status'],
  'packages/controller/src/demo': ['packages/controller/src/cli'],
  'packages/controller/src/dev-certs': ['packages/controller/src/demo'],
  'packages/controller/src/status': ['packages/controller/src/cli'],
  // server/ builds on tls/'s credentials, and tls/ imports server/'s CertificateSource and log.
  'packages/grpc/src/server': ['packages/grpc/src/tls'],
  'packages/grpc/src/tls': ['packages/grpc/src/server'],
};

/** A regular expression that matches exactly one of `paths`. */
const exactly = (/** @type {readonly string[]} */ paths) => `^(${paths.map((p) => p.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')).join('|')})$`;

/** @type {import('dependency-cruiser').IForbiddenRuleType[]} */
const folderLoopRules = [
  {
    name: 'no-circular-folders',
    severity: 'error',
    comment:
      'An import circle between the folders of a package: move the module whose concept belongs lower (or the shared definition) so each folder imports only folders below it.',
    scope: 'folder',
    from: { path: '^packages/[^/]+/src(/|$)', pathNot: exactly(Object.keys(KNOWN_FOLDER_LOOPS)) },
    to: { circular: true },
  },
  ...Object.entries(KNOWN_FOLDER_LOOPS).map(([from, allowed]) => ({
    name: 'no-circular-folders',
    severity: /** @type {const} */ ('error'),
    comment: `A new import circle from ${from}, which has known ones (KNOWN_FOLDER_LOOPS in .dependency-cruiser.mjs) but no others.`,
    scope: /** @type {const} */ ('folder'),
    from: { path: exactly([from]) },
    to: { circular: true, pathNot: exactly(allowed) },
  })),
];

/** @type {import('dependency-cruiser').IConfiguration} */
export default {
  forbidden: [
    {
      name: 'no-circular',
      severity: 'error',
      comment: 'An import circle inside a package: move the shared definition to the module where its concept lives.',
      from: { path: '^packages/[^/]+/src/' },
      to: { circular: true },
    },
    ...folderLoopRules,
  ],
  options: {
    doNotFollow: { path: 'node_modules' },
    exclude: { path: '(^|/)(dist|node_modules)/' },
    // Type-only imports (`import type`, `export type ... from`) count.
    tsPreCompilationDeps: true,
    tsConfig: { fileName: 'tsconfig.json' },
    enhancedResolveOptions: { extensions: ['.ts', '.js', '.mjs', '.json'] },
  },
};
