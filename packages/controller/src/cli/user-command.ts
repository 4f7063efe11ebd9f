import type { KubeRestClient } from '@eso-mtls/kubernetes';
import type { Flag } from '../command-line/args.js';
import { connectAsUser } from '../status/connect.js';
import { StatusExit } from '../status/exit-codes.js';
import { type CliOptions, readCliOptions } from '../status/options.js';
import type { CliStreams } from './controller.js';

/** A command that acts with the user's own credentials (`eso-mtls status`, `eso-mtls renew`). */
export interface UserCommand<T> {
  /** As users type it, e.g. `eso-mtls status`; every message printed starts with it. */
  readonly name: string;
  readonly flags: readonly Flag[];
  /** The text `--help` prints. */
  usage(): string;
  /** What the command's own flags ask for, or the usage error to print; checked before connecting. */
  choose(values: ReadonlyMap<string, string>): T | { readonly error: string };
}

/** A command opened: its options, what its own flags chose, and a client with the user's credentials. */
export interface OpenedCommand<T> {
  readonly options: CliOptions;
  readonly chosen: T;
  readonly api: KubeRestClient;
}

/**
 * The opening status and renew share: read the flags and the policy as the controller would, answer
 * `--help`, check the command's own flags, then connect with the user's kubeconfig. Resolves with the
 * opened command, or with the exit code after printing help or the problem.
 */
export async function openUserCommand<T>(
  command: UserCommand<T>,
  argv: readonly string[],
  env: Readonly<Record<string, string | undefined>>,
  streams: CliStreams,
): Promise<OpenedCommand<T> | number> {
  const fail = (message: string): number => {
    streams.stderr.write(`${command.name}: ${message}\n`);
    return StatusExit.usage;
  };
  const read = readCliOptions(command.name, command.flags, argv, env);
  if (read.kind === 'help') {
    streams.stdout.write(command.usage());
    return StatusExit.healthy;
  }
  if (read.kind === 'error') return fail(read.message);
  const chosen = command.choose(read.options.values);
  if (isError(chosen)) return fail(chosen.error);
  try {
    return { options: read.options, chosen, api: (await connectAsUser(read.options.kubeconfig, env)).api };
  } catch (e) {
    return fail((e as Error).message);
  }
}

const isError = (v: unknown): v is { readonly error: string } => typeof v === 'object' && v !== null && 'error' in v && typeof v.error === 'string';
