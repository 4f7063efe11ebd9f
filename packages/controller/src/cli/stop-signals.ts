/**
 * Ctrl-C (SIGINT) or SIGTERM, as simulate and dev-cluster honour them.
 * @internal Shared with \@eso-mtls/devtools; not part of the supported API.
 */
export interface StopSignals {
  /** Resolves at the first signal. */
  readonly stopped: Promise<void>;
  /** The first signal, once one came. */
  requested(): NodeJS.Signals | undefined;
}

/**
 * The first SIGINT or SIGTERM asks for a clean stop, honoured as soon as the step in progress ends;
 * a second one calls `onSecond` (which says what is left behind) and exits at once with code 1.
 * @internal Shared with \@eso-mtls/devtools; not part of the supported API.
 */
export function listenForStop(onSecond: (signal: NodeJS.Signals) => void): StopSignals {
  let first: NodeJS.Signals | undefined;
  let wake: () => void = () => undefined;
  const stopped = new Promise<void>((r) => (wake = r));
  const onSignal = (signal: NodeJS.Signals): void => {
    if (first !== undefined) {
      onSecond(signal);
      process.exit(1);
    }
    first = signal;
    wake();
  };
  process.on('SIGINT', onSignal);
  process.on('SIGTERM', onSignal);
  return { stopped, requested: () => first };
}

/**
 * The exit code of a run stopped early by Ctrl-C or SIGTERM, as shells report SIGINT.
 * @internal Shared with \@eso-mtls/devtools; not part of the supported API.
 */
export const EXIT_INTERRUPTED = 130;
