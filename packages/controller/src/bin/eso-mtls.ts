#!/usr/bin/env node
// The `eso-mtls` command: dispatches to a subcommand.
import { runControllerCommand } from '../cli/controller.js';
import { runSimulateCommand } from '../cli/simulate.js';

const USAGE = `Usage: eso-mtls <command> [flags]

Commands:
  controller   run the certificate controller against a Kubernetes cluster
  simulate     simulate years of rotations offline and print the timeline

Run eso-mtls <command> --help for the flags of a command.
`;

async function main(argv: readonly string[]): Promise<number> {
  const [command, ...rest] = argv;
  switch (command) {
    case 'controller':
      return runControllerCommand(rest);
    case 'simulate':
      return runSimulateCommand(rest);
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
