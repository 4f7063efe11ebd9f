import { randomUUID } from 'node:crypto';
import type { Instant } from '@eso-mtls/core';
import { hostname } from 'node:os';
import { parseControllerConfig } from '../config.js';
import { type RunningController, startController } from '../controller.js';
import { createLogger } from '../logger.js';
import { operatingModes } from '../modes.js';
import { type MaybeTerminal, plainFatalLine } from './terminal.js';

/** Where the CLI writes what is not a log line (usage, configuration errors). */
export interface CliStreams {
  readonly stdout: { write(text: string): unknown } & MaybeTerminal;
  readonly stderr: { write(text: string): unknown } & MaybeTerminal;
}

/** What an embedder or a test may give {@link runControllerCommand} besides flags and environment. */
export interface ControllerCommandOptions {
  /** The certificate clock (default Date.now); leader election and timers keep the real clocks. */
  readonly now?: () => Instant;
  /** Told once the controller has started (before its caches sync), e.g. to ask it for a reconcile. */
  readonly onStarted?: (controller: RunningController) => void;
}

/** Exit code of a configuration error, as for a usage error. */
export const EXIT_USAGE = 2;

/**
 * `eso-mtls controller [flags]`: parses flags and environment, starts the controller and runs it
 * until SIGTERM or SIGINT, then shuts down cleanly. Resolves with the process exit code.
 */
export async function runControllerCommand(
  argv: readonly string[],
  env: NodeJS.ProcessEnv = process.env,
  streams: CliStreams = { stdout: process.stdout, stderr: process.stderr },
  options: ControllerCommandOptions = {},
): Promise<number> {
  const parsed = parseControllerConfig(argv, env);
  if (parsed.kind === 'help') {
    streams.stdout.write(parsed.text);
    return 0;
  }
  if (parsed.kind === 'error') {
    streams.stderr.write(`eso-mtls controller: ${parsed.error.message}\n`);
    return EXIT_USAGE;
  }
  const config = parsed.config;
  const logger = createLogger(config.logLevel);
  const identity = config.leaderElection.identity ?? `${hostname()}_${randomUUID()}`;
  logger.info(
    {
      identity,
      namespace: config.policy.esoNamespace,
      keyAlgorithm: config.policy.keyAlgorithm,
      reconcileIntervalMs: config.policy.reconcileInterval,
      propagationDelayMs: config.policy.propagationDelay,
      leaderElect: config.leaderElection.enabled,
      ...operatingModes(config),
    },
    'starting eso-mtls controller',
  );

  let controller: RunningController | undefined;
  let signalled: NodeJS.Signals | undefined;
  const stopRequested = new Promise<NodeJS.Signals>((resolve) => {
    const onSignal = (signal: NodeJS.Signals): void => {
      if (signalled) {
        logger.warn({ signal }, 'second signal: exiting without a clean shutdown');
        process.exit(1);
      }
      signalled = signal;
      resolve(signal);
    };
    process.on('SIGTERM', onSignal);
    process.on('SIGINT', onSignal);
  });

  try {
    controller = await startController(config, { logger, identity, env, ...(options.now ? { now: options.now } : {}) });
  } catch (e) {
    const message = (e as Error).message;
    logger.fatal({ error: message }, 'could not start');
    // The JSON line is for log collectors; a person at a terminal also gets the reason in plain words.
    const plain = plainFatalLine('eso-mtls controller', message, streams.stderr);
    if (plain !== undefined) streams.stderr.write(plain);
    return 1;
  }
  options.onStarted?.(controller);
  if (signalled) logger.info({ signal: signalled }, 'signal arrived during start-up');
  const signal = await stopRequested;
  logger.info({ signal }, 'shutting down: stopping informers, finishing the write in flight, releasing the lease');
  await controller.stop();
  // Everything is closed; should a stray handle remain (a sync finishing during stop), still exit.
  setTimeout(() => process.exit(0), 2000).unref();
  return 0;
}
