// @ts-check
import js from '@eslint/js';
import tseslint from 'typescript-eslint';

// The core's promise is purity: no I/O, no environment, no wall clock, no ambient randomness.
// These rules make the machine keep that promise; `packages/core/src/node/` (the default
// Node-crypto signer entry point) is the one exempt place.
const coreImportAllowlist = '^(?!(@peculiar/x509|@peculiar/asn1-[a-z0-9-]+|pkijs|asn1js|reflect-metadata|\\.{1,2}/.*)$).*';

const impureGlobals = ['process', 'fetch', 'setTimeout', 'setInterval', 'setImmediate', 'performance', 'crypto', 'require'].map((name) => ({
  name,
  message: `packages/core is side-effect free: inject what you need instead of using the global '${name}'.`,
}));

export default tseslint.config(
  { ignores: ['**/dist/**', '**/node_modules/**', 'coverage/**', 'testing/**/gen/**'] },
  js.configs.recommended,
  ...tseslint.configs.recommended,
  {
    languageOptions: {
      globals: {
        process: 'readonly',
        console: 'readonly',
        Buffer: 'readonly',
        URL: 'readonly',
        setTimeout: 'readonly',
        clearTimeout: 'readonly',
        setInterval: 'readonly',
        clearInterval: 'readonly',
        setImmediate: 'readonly',
        clearImmediate: 'readonly',
        performance: 'readonly',
        fetch: 'readonly',
        TextEncoder: 'readonly',
        TextDecoder: 'readonly',
        AbortController: 'readonly',
        AbortSignal: 'readonly',
        queueMicrotask: 'readonly',
        structuredClone: 'readonly',
        globalThis: 'readonly',
        crypto: 'readonly',
      },
    },
    rules: {
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_', varsIgnorePattern: '^_' }],
    },
  },
  {
    files: ['packages/core/src/**/*.ts'],
    ignores: ['packages/core/src/node/**'],
    rules: {
      'no-restricted-imports': [
        'error',
        {
          patterns: [{ regex: coreImportAllowlist, message: 'packages/core may import only the X.509/ASN.1 libraries and its own files.' }],
        },
      ],
      'no-restricted-globals': ['error', ...impureGlobals],
      'no-restricted-syntax': [
        'error',
        { selector: 'ImportExpression', message: 'No dynamic import() in packages/core.' },
        {
          selector: "CallExpression[callee.object.name='Date'][callee.property.name='now']",
          message: 'No Date.now() in packages/core: take `now` as an argument.',
        },
        {
          selector: "NewExpression[callee.name='Date'][arguments.length=0]",
          message: 'No new Date() without an argument in packages/core: take `now` as an argument.',
        },
        {
          selector: "MemberExpression[object.name='Math'][property.name='random']",
          message: 'No Math.random in packages/core: take randomness as an injected function.',
        },
        { selector: "MemberExpression[object.name='globalThis']", message: 'No globalThis in packages/core: inject what you need.' },
      ],
    },
  },
  {
    // What several packages' tests share lives in the test kit (testing/kit), imported by name; a
    // support folder serves only the tests beside it (`./support/`, `../support/`).
    files: ['packages/*/test/**/*.ts', 'examples/*/test/**/*.ts', 'testing/**/*.ts'],
    rules: {
      'no-restricted-imports': [
        'error',
        {
          patterns: [
            {
              regex: '^(\\.\\./)+(?!support/).*/support/',
              message: "Another folder's test support: import the shared helper from @eso-mtls/test-kit/<module> (testing/kit), or move it there.",
            },
          ],
        },
      ],
    },
  },
);
