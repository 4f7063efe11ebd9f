import type { DeveloperTools } from '@eso-mtls/controller';

/**
 * Runs `eso-mtls demo|dev-cluster|dev-certs` with `argv`, for the controller package's `eso-mtls`
 * command, which finds this package when it is installed; resolves with the exit code. Each
 * command's modules load when it runs, so dev-certs loads neither the launcher nor the chart renderer.
 */
export const runDeveloperCommand: DeveloperTools['runDeveloperCommand'] = async (command, argv) => {
  switch (command) {
    case 'demo':
      return (await import('./cli/demo.js')).runDemoCommand(argv);
    case 'dev-certs':
      return (await import('./cli/dev-certs.js')).runDevCertsCommand(argv);
    case 'dev-cluster':
      return (await import('./cli/dev-cluster.js')).runDevClusterCommand(argv);
    default:
      throw new Error(`@eso-mtls/devtools has no command ${JSON.stringify(command satisfies never)}`);
  }
};

/**
 * Draws a simulation's rotation timeline into `file` (.svg, or an .html page holding the SVG), for
 * `eso-mtls simulate --chart`: the certificates' validity, the CA phases, each rotation by reason,
 * the minimum remaining validity and any violation. The renderer (Vega) loads on the first chart.
 */
export const writeSimulationChart: DeveloperTools['writeSimulationChart'] = async (file, { title, policy, result }) => {
  const { writeTimelineChart } = await import('./chart/chart-file.js');
  const { summary } = result;
  await writeTimelineChart(file, {
    title,
    start: summary.start,
    end: summary.end,
    policy,
    records: result.timeline,
    minRemainingValidity: summary.minRemainingValidity,
    violations: summary.violations,
  });
};
