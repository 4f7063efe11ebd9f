// The streams a CLI command writes to, captured in memory, for tests that run a command in-process.

/** Captured stdout and stderr of one in-process command run. */
export interface Capture {
  readonly streams: { stdout: { write(t: string): boolean; isTTY: false }; stderr: { write(t: string): boolean } };
  out(): string;
  err(): string;
}

/** Fresh streams that keep what is written (stdout is not a terminal). */
export function capture(): Capture {
  let out = '';
  let err = '';
  return {
    streams: { stdout: { write: (t) => ((out += t), true), isTTY: false }, stderr: { write: (t) => ((err += t), true) } },
    out: () => out,
    err: () => err,
  };
}
