import { describe, expect, it } from '@jest/globals';
import { DevtoolsMissingError, type ModuleImporter, loadDeveloperTools } from '../src/cli/developer-tools.js';

// `eso-mtls demo|dev-cluster|dev-certs` and `simulate --chart` find @eso-mtls/devtools when it is
// installed (the controller package does not depend on it); when it is not, the error names it.

/** An importer that fails as Node's `import()` does when `missing` is not installed. */
const without =
  (missing: string): ModuleImporter =>
  async () => {
    throw Object.assign(new Error(`Cannot find package '${missing}' imported from /app/node_modules/@eso-mtls/controller/dist/cli/developer-tools.js`), {
      code: 'ERR_MODULE_NOT_FOUND',
    });
  };

describe('loadDeveloperTools', () => {
  it('finds @eso-mtls/devtools in the workspace, with what eso-mtls uses of it', async () => {
    const tools = await loadDeveloperTools('eso-mtls demo');
    expect(typeof tools.runDeveloperCommand).toBe('function');
    expect(typeof tools.writeSimulationChart).toBe('function');
  });

  it('names the package to install, and the npx line that runs the command without installing, when it is missing', async () => {
    const loading = loadDeveloperTools('eso-mtls dev-certs', without('@eso-mtls/devtools'));
    await expect(loading).rejects.toBeInstanceOf(DevtoolsMissingError);
    await expect(loading).rejects.toThrow(
      'eso-mtls dev-certs needs @eso-mtls/devtools, which is not installed: install it beside @eso-mtls/controller (`npm install @eso-mtls/devtools`), ' +
        'or run `npx -p @eso-mtls/devtools eso-mtls dev-certs ...`',
    );
  });

  it('passes on a module devtools itself cannot find: that is a broken install, not a missing package', async () => {
    const loading = loadDeveloperTools('eso-mtls simulate --chart', without('vega'));
    await expect(loading).rejects.not.toBeInstanceOf(DevtoolsMissingError);
    await expect(loading).rejects.toThrow("Cannot find package 'vega'");
  });
});
