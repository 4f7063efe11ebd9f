#!/usr/bin/env node
// The `eso-mtls` command: dispatches to a subcommand.
import { runControllerCommand } from '../cli/controller.js';
import { runSimulateCommand } from '../cli/simulate.js';
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

Run eso-mtls <command> --help for the flags of a command.
eso-mtls --version prints the version.
`;

async function main(argv: readonly string[]): Promise<number> {
  const [command, ...rest] = argv;
  switch (command) {
    case 'controller':
      return runControllerCommand(rest);
    case 'simulate':
      return runSimulateCommand(rest);
    case 'status':
      return (await import('../cli/status.js')).runStatusCommand(rest);
    case 'renew':
      return (await import('../cli/renew.js')).runRenewCommand(rest);
    case 'demo':
      return (await import('../cli/demo.js')).runDemoCommand(rest);
    case 'dev-certs':
      return (await import('../cli/dev-certs.js')).runDevCertsCommand(rest);
    case 'dev-cluster':
      return (await import('../cli/dev-cluster.js')).runDevClusterCommand(rest);
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

main(process.argv.slice(2)).then(
  (code) => {
    process.exitCode = code;
  },
  (e: unknown) => {
    process.stderr.write(`eso-mtls: ${(e as Error)?.stack ?? String(e)}\n`);
    process.exitCode = 1;
  },
);
