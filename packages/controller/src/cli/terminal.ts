/** A stream as far as deciding how to write to it goes (process.stdout and process.stderr qualify). */
export interface MaybeTerminal {
  readonly isTTY?: boolean;
}

/**
 * Whether `stream` is a person's terminal rather than a pipe or a file: live progress lines,
 * carriage returns and plain one-line summaries of JSON logs are for people, never for files
 * that scripts and log collectors read. `TERM=dumb` (an editor's shell, say) counts as no terminal.
 * @internal Shared with \@eso-mtls/devtools; not part of the supported API.
 */
export function isTerminal(stream: MaybeTerminal, env: Readonly<Record<string, string | undefined>> = process.env): boolean {
  return stream.isTTY === true && env.TERM !== 'dumb';
}

/**
 * The plain line a command prints on stderr when it cannot start, besides its JSON log line, if
 * stderr is a terminal (undefined otherwise: a pipe already has the JSON line, once).
 */
export function plainFatalLine(
  command: string,
  message: string,
  stderr: MaybeTerminal,
  env?: Readonly<Record<string, string | undefined>>,
): string | undefined {
  return isTerminal(stderr, env) ? `${command}: could not start: ${message.split('\n')[0]}\n` : undefined;
}
