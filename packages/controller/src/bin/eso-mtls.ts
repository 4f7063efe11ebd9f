#!/usr/bin/env node
// The `eso-mtls` command: dispatches to a subcommand.
import { runControllerCommand } from '../cli/controller.js';
import { DEVTOOLS_PACKAGE, type DeveloperCommand, type DeveloperTools, DevtoolsMissingError, loadDeveloperTools } from '../cli/developer-tools.js';
import { unsupportedNodeWarning } from '../cli/node-support.js';
import { runSimulateCommand } from '../cli/simulate.js';
import { listenForStop } from '../cli/stop-signals.js';
import { controllerVersion } from '../cli/version.js';

const USAGE = `Usage: eso-mtls <command> [flags]

Commands:
  controller   run the certificate controller against a Kubernetes cluster
  simulate     simulate years of rotations offline and print the timeline
  demo         watch real mTLS calls survive rotations on this machine (Node only, 2 minutes)
  status       show the certificates in a cluster and what needs attention (exit 0 healthy)
  renew        ask the controller to rotate a namespace's, the client's or the CA certificate now
  dev-cluster  run a local etcd + kube-apiserver (from a clone) to try the controller against
  dev-certs    write rotating certificate folders for developing a provider without a cluster

demo, dev-cluster and dev-certs come with ${DEVTOOLS_PACKAGE}, installed beside this package.
Run eso-mtls <command> --help for the flags of a command.
eso-mtls --version prints the version.
`;

async function main(argv: readonly string[]): Promise<number> {
  const [command, ...rest] = argv;
  switch (command) {
    case 'controller':
      return runControllerCommand(rest);
    case 'simulate':
      return runSimulateCommand(rest, undefined, stopSignal('simulate'));
    case 'status':
      return (await import('../cli/status.js')).runStatusCommand(rest);
    case 'renew':
      return (await import('../cli/renew.js')).runRenewCommand(rest);
    case 'demo':
    case 'dev-certs':
    case 'dev-cluster':
      return runDeveloperCommand(command, rest);
    case '--version':
    case '-V':
    case 'version':
      process.stdout.write(`eso-mtls ${controllerVersion()}\n`);
      return 0;
    case undefined:
    case '--help':
    case '-h':
    case 'help':
      process.stdout.write(USAGE);
      return command === undefined ? 2 : 0;
    default:
      process.stderr.write(`eso-mtls: unknown command ${JSON.stringify(command)}\n\n${USAGE}`);
      return 2;
  }
}

// The developer commands live in @eso-mtls/devtools, found when it is installed.
async function runDeveloperCommand(command: DeveloperCommand, argv: readonly string[]): Promise<number> {
  let tools: DeveloperTools;
  try {
    tools = await loadDeveloperTools(`eso-mtls ${command}`);
  } catch (e) {
    if (!(e instanceof DevtoolsMissingError)) throw e;
    process.stderr.write(`${e.message}\n`);
    return 1;
  }
  return tools.runDeveloperCommand(command, argv);
}

// The first Ctrl-C (SIGINT) or SIGTERM aborts the signal, and the command reports what it did so
// far; a second one exits at once.
function stopSignal(command: string): AbortSignal {
  const stop = new AbortController();
  const signals = listenForStop((name) => process.stderr.write(`eso-mtls ${command}: ${name} again: stopped at once, nothing reported\n`));
  void signals.stopped.then(() => stop.abort(new Error(`stopped by ${signals.requested()}`)));
  return stop.signal;
}

// Said once, before any output: npx runs the command on any Node without a word. Not for the
// version and usage texts, which do no work a Node line changes and which scripts may capture.
const argv = process.argv.slice(2);
const warning = ['--version', '-V', 'version', '--help', '-h', 'help', undefined].includes(argv[0]) ? undefined : unsupportedNodeWarning(process.versions.node);
if (warning !== undefined) process.stderr.write(warning);

main(argv).then(
  (code) => {
    process.exitCode = code;
  },
  (e: unknown) => {
    process.stderr.write(`eso-mtls: ${(e as Error)?.stack ?? String(e)}\n`);
    process.exitCode = 1;
  },
);
