// @ts-check
// `npm run lint:cycles`: no import circle inside a package's src/, type-only imports included (a type
// import is a circle of concepts all the same). An import of another package resolves to its
// src/index.ts (tsconfig.json paths), so a circle between packages fails too. Tests are not cruised.
//
// The folders of a package's src/ stack as a ladder, each importing only folders below it, so a
// reader can take them bottom up (docs/architecture.md, "A reading order"). A folder imports the
// folders named by its modules' imports, its subfolders' included; a folder's own subfolders are
// inside it, not imports of it.

/** @type {import('dependency-cruiser').IForbiddenRuleType[]} */
const folderLoopRules = [
  {
    name: 'no-circular-folders',
    severity: 'error',
    comment:
      'An import circle between the folders of a package: move the module whose concept belongs lower (or the shared definition) so each folder imports only folders below it.',
    scope: 'folder',
    from: { path: '^packages/[^/]+/src(/|$)' },
    to: { circular: true },
  },
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
