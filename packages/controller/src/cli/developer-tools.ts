import type { Policy, SimulationResult } from '@eso-mtls/core';

/** The package that holds the developer commands, published beside this one. */
export const DEVTOOLS_PACKAGE = '@eso-mtls/devtools';

/** The `eso-mtls` commands that live in `@eso-mtls/devtools`: the controller's install and image carry none of them. */
export type DeveloperCommand = 'demo' | 'dev-cluster' | 'dev-certs';

/** A simulation to draw: what `eso-mtls simulate --chart` hands the chart writer. */
export interface SimulationChart {
  /** The chart's title: the command and what it simulated. */
  readonly title: string;
  /** The policy simulated: it places each certificate's notBefore, notAfter and lookahead window. */
  readonly policy: Policy;
  /** The timeline and summary the simulation returned. */
  readonly result: SimulationResult;
}

/**
 * What `eso-mtls` uses of `@eso-mtls/devtools`; that package's index provides exactly this.
 * Declared here, not there, because devtools depends on the controller package and never the reverse.
 */
export interface DeveloperTools {
  /** Runs `eso-mtls <command> <argv>`; resolves with its exit code. */
  runDeveloperCommand(command: DeveloperCommand, argv: readonly string[]): Promise<number>;
  /** Draws a simulation's rotation timeline into `file` (.svg or .html). */
  writeSimulationChart(file: string, chart: SimulationChart): Promise<void>;
}

/** {@link DEVTOOLS_PACKAGE} is not installed; the message says what to install. */
export class DevtoolsMissingError extends Error {}

/** Imports a module by specifier: `import()` itself, or a stand-in in tests. */
export type ModuleImporter = (specifier: string) => Promise<unknown>;

/**
 * Loads {@link DEVTOOLS_PACKAGE} for `use` (`eso-mtls demo`, `eso-mtls simulate --chart`), or throws
 * a {@link DevtoolsMissingError} naming the package to install when it is not installed. The
 * specifier is a value, not a literal, so that neither the compiler nor the dependency checks take
 * the controller package for a dependent of devtools. A module devtools itself fails to find is
 * another fault, rethrown as it is.
 */
export async function loadDeveloperTools(use: string, importModule: ModuleImporter = (specifier) => import(specifier)): Promise<DeveloperTools> {
  try {
    return (await importModule(DEVTOOLS_PACKAGE)) as DeveloperTools;
  } catch (e) {
    if (!isMissingPackage(e, DEVTOOLS_PACKAGE)) throw e;
    throw new DevtoolsMissingError(devtoolsMissing(use));
  }
}

/** What to do when {@link DEVTOOLS_PACKAGE} is missing for `use` (as typed, e.g. `eso-mtls demo`), in one line. */
function devtoolsMissing(use: string): string {
  return (
    `${use} needs ${DEVTOOLS_PACKAGE}, which is not installed: install it beside @eso-mtls/controller ` +
    `(\`npm install ${DEVTOOLS_PACKAGE}\`), or run \`npx -p ${DEVTOOLS_PACKAGE} ${use} ...\``
  );
}

// Node says ERR_MODULE_NOT_FOUND for `import()`, MODULE_NOT_FOUND for `require`; either names the specifier quoted.
function isMissingPackage(e: unknown, name: string): boolean {
  const { code, message } = (e ?? {}) as { code?: unknown; message?: unknown };
  return (code === 'ERR_MODULE_NOT_FOUND' || code === 'MODULE_NOT_FOUND') && typeof message === 'string' && message.includes(`'${name}'`);
}
