/** @jest-config-loader ts-node
 * @jest-config-loader-options {"transpileOnly": true, "compilerOptions": {"module": "CommonJS", "moduleResolution": "Bundler"}}
 */
// Jest reads this file through ts-node; transpile-only keeps start-up fast (tsc type-checks it anyway).
import type { Config } from 'jest';

// ESM mode: several dependencies (pkijs, asn1js, @kubernetes/client-node) ship ESM only.
// Tests import workspace packages from source, so no build is needed before `jest`.
const config: Config = {
  testEnvironment: 'node',
  extensionsToTreatAsEsm: ['.ts'],
  setupFiles: ['reflect-metadata'],
  transform: {
    '^.+\\.ts$': [
      '@swc/jest',
      {
        jsc: { parser: { syntax: 'typescript' }, target: 'es2022' },
        module: { type: 'es6' },
        sourceMaps: 'inline',
      },
    ],
  },
  moduleNameMapper: {
    '^@eso-mtls/core/node$': '<rootDir>/packages/core/src/node/index.ts',
    '^@eso-mtls/devtools/cluster$': '<rootDir>/packages/devtools/src/cluster/index.ts',
    // The test kit (testing/kit): private, never built, one module per helper.
    '^@eso-mtls/test-kit/([a-z-]+)$': '<rootDir>/testing/kit/src/$1.ts',
    '^@eso-mtls/([a-z-]+)$': '<rootDir>/packages/$1/src/index.ts',
    '^(\\.{1,2}/.*)\\.js$': '$1',
  },
  testMatch: ['<rootDir>/packages/*/test/**/*.test.ts', '<rootDir>/examples/*/test/**/*.test.ts', '<rootDir>/testing/**/*.test.ts'],
  // The real node's long run (production timings, every fault) is `npm run test:real-node`.
  testPathIgnorePatterns: ['/node_modules/', '<rootDir>/testing/real-node/long/'],
  testTimeout: 60_000,
  // Two suites at a time on our 2-core machines (jest's default is one fewer than the cores): most
  // of the long suites wait on processes (apiservers, a real node, helm, Go clients), so a second
  // suite uses the time. Every suite must hold on a loaded machine anyway.
  maxWorkers: 2,
  // Longest suites first, by their durations in earlier runs on this machine (recorded outside the
  // clone), so the two workers finish together.
  testSequencer: '<rootDir>/testing/jest/duration-sequencer.mjs',
};

export default config;
