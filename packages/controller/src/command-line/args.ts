/**
 * A flag of any `eso-mtls` command, the one shape they all take: what the parser reads (name,
 * kind, alias) and what errors and help say of it.
 */
export interface Flag {
  /** Flag name without the leading dashes. */
  readonly name: string;
  /** `string` takes a value; `bool` is a switch, true when bare, or `--name=true|false`. */
  readonly kind: 'string' | 'bool';
  /** What a valid value looks like; named when the value is missing or invalid, and in help. */
  readonly accepts?: string;
  /** What the flag does, for help built from the flags (the controller's, status's and renew's). */
  readonly help?: string;
  /** Default as it would be typed; undefined when there is none or it is derived from another flag. */
  readonly default?: string | undefined;
  /** A one-letter alias (`-n`, `-o`), read as the flag itself. */
  readonly short?: string;
  /** Its environment variable, for a command that reads one beside it (status's flags shared with the controller). */
  readonly env?: string;
  /** May be given more than once; the values are kept in order, joined by commas (`--provider a --provider b` reads `a,b`). */
  readonly repeatable?: boolean;
}

/**
 * How a command words the three things the reader can find wrong; each message ends with `; see <command> --help` where it helps.
 * @internal Shared with \@eso-mtls/devtools; not part of the supported API.
 */
export interface FlagErrorWords {
  /** `suggestion` is the known flag the typed one most likely meant, when one is close. */
  unknown(typed: string, name: string, suggestion?: string): string;
  unexpected(arg: string): string;
  missingValue(flag: Flag): string;
}

/**
 * One command's flags.
 * @internal Shared with \@eso-mtls/devtools; not part of the supported API.
 */
export interface CommandLine {
  /** The command as users type it, e.g. `eso-mtls controller`. */
  readonly command: string;
  readonly flags: readonly Flag[];
  /** Its error wording (default: {@link goFlagWords}, the controller's). */
  readonly words?: FlagErrorWords;
}

/**
 * What argv asked for: flag values by name (a bare bool flag is `true`), help, or an error to print.
 * @internal Shared with \@eso-mtls/devtools; not part of the supported API.
 */
export type ArgvResult =
  { readonly kind: 'flags'; readonly values: ReadonlyMap<string, string> } | { readonly kind: 'help' } | { readonly kind: 'error'; readonly message: string };

/**
 * The controller's wording, as Kubernetes controllers word flag errors.
 * @internal Shared with \@eso-mtls/devtools; not part of the supported API.
 */
export function goFlagWords(command: string): FlagErrorWords {
  const seeHelp = `; see ${command} --help`;
  return {
    unknown: (_typed, name, suggestion) => `unknown flag --${name}${suggestion === undefined ? '' : ` (did you mean --${suggestion}?)`}${seeHelp}`,
    unexpected: (arg) => `unexpected argument ${JSON.stringify(arg)}: ${command} takes only flags${seeHelp}`,
    missingValue: (flag) => `flag --${flag.name} needs a value${flag.accepts === undefined ? '' : `: ${flag.accepts}`}`,
  };
}

const FLAG = /^--?([a-z][a-z0-9-]*)(?:=(.*))?$/s;

/**
 * Reads `argv` (without the command words) against `line`'s flags, the one way every command
 * does, as Kubernetes controllers (Go's `flag` package) read flags: `--name value`, `--name=value`
 * or `-name`, and the same with a flag's `short` alias; a value is the next argument whatever it
 * looks like; a bool flag is true when bare and takes a value only after `=`; the last of a
 * repeated flag wins, unless it is `repeatable`; `--help` or `-h` asks for help; reading stops at the first of help or a
 * problem. Values are keyed by the flag's name. Pure: no I/O.
 * @internal Shared with \@eso-mtls/devtools; not part of the supported API.
 */
export function readArgv(argv: readonly string[], line: CommandLine): ArgvResult {
  const words = line.words ?? goFlagWords(line.command);
  const flags = new Map(line.flags.flatMap((f) => [[f.name, f] as const, ...(f.short ? [[f.short, f] as const] : [])]));
  const values = new Map<string, string>();
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i]!;
    if (arg === '--help' || arg === '-h') return { kind: 'help' };
    const m = FLAG.exec(arg);
    if (!m) return { kind: 'error', message: words.unexpected(arg) };
    const flag = flags.get(m[1]!);
    if (!flag) return { kind: 'error', message: words.unknown(arg.split('=')[0]!, m[1]!, closestFlag(m[1]!, line.flags)) };
    let value = m[2];
    if (value === undefined) {
      if (flag.kind === 'bool') value = 'true';
      else if (i + 1 < argv.length) value = argv[++i]!;
      // Named as typed: `-n` is not told that `--namespace` needs a value.
      else return { kind: 'error', message: words.missingValue({ ...flag, name: m[1]! }) };
    }
    const earlier = flag.repeatable ? values.get(flag.name) : undefined;
    values.set(flag.name, earlier === undefined ? value : `${earlier},${value}`);
  }
  return { kind: 'flags', values };
}

/**
 * The known flag a mistyped name most likely meant: the nearest by edit distance, if at most a
 * third of the name's letters differ (so `--namspace` finds `--namespace`, `--x` finds nothing).
 */
export function closestFlag(name: string, flags: readonly Flag[]): string | undefined {
  let best: { name: string; distance: number } | undefined;
  for (const flag of flags) {
    const distance = editDistance(name, flag.name);
    if (distance <= Math.floor(flag.name.length / 3) && (best === undefined || distance < best.distance)) best = { name: flag.name, distance };
  }
  return best?.name;
}

// Levenshtein distance, one row at a time; flag names are short.
function editDistance(a: string, b: string): number {
  let previous = Array.from({ length: b.length + 1 }, (_, j) => j);
  for (let i = 1; i <= a.length; i++) {
    const row = [i];
    for (let j = 1; j <= b.length; j++) row.push(Math.min(previous[j]! + 1, row[j - 1]! + 1, previous[j - 1]! + (a[i - 1] === b[j - 1] ? 0 : 1)));
    previous = row;
  }
  return previous[b.length]!;
}

/**
 * One row of a help table: what to type, and what it does (one string per line).
 * @internal Shared with \@eso-mtls/devtools; not part of the supported API.
 */
export type HelpRow = readonly [usage: string, description: string | readonly string[]];

/**
 * Lays out `--help` rows in two aligned columns: every description starts in the same column,
 * two spaces after the widest usage, and further lines of a description start there too. Rows
 * whose usage is wider than `maxUsageWidth` put their description on the next line instead, so
 * one long flag does not push every description to the right.
 * @internal Shared with \@eso-mtls/devtools; not part of the supported API.
 */
export function helpTable(rows: readonly HelpRow[], options: { readonly indent?: number; readonly maxUsageWidth?: number } = {}): string {
  const indent = ' '.repeat(options.indent ?? 2);
  const limit = options.maxUsageWidth ?? 32;
  const width = Math.max(0, ...rows.map(([usage]) => usage.length).filter((w) => w <= limit));
  const column = indent + ' '.repeat(width + 2);
  const lines: string[] = [];
  for (const [usage, description] of rows) {
    const [first = '', ...rest] = typeof description === 'string' ? [description] : description;
    if (usage.length > width) lines.push(indent + usage, column + first);
    else lines.push(indent + usage.padEnd(width + 2) + first);
    for (const line of rest) lines.push(column + line);
  }
  return lines.map((l) => l.trimEnd()).join('\n');
}
