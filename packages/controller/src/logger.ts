import { pino, type DestinationStream, type Logger } from 'pino';
import type { LogLevel } from './config.js';

/** Paths pino censors wherever a caller passes a Secret, a key or raw Secret data by mistake. */
const REDACTED_PATHS = [
  'data',
  '*.data',
  'stringData',
  '*.stringData',
  'privateKeyPem',
  '*.privateKeyPem',
  'key',
  '*.key',
  'secret.data',
  '*.secret.data',
  'body',
  '*.body',
];

const PEM_PRIVATE_KEY = /-----BEGIN [A-Z0-9 ]*PRIVATE KEY-----[\s\S]*?(-----END [A-Z0-9 ]*PRIVATE KEY-----|$)/g;

/**
 * The last line of defence: a serialised line that still holds a PEM private key (for instance
 * inside an error message quoting a request body) has the block replaced before it is written.
 */
export function scrubPrivateKeys(line: string): string {
  return line.includes('PRIVATE KEY') ? line.replace(PEM_PRIVATE_KEY, '[REDACTED PRIVATE KEY]') : line;
}

/** Options of {@link createLogger}. */
export interface LoggerOptions {
  /** Where the lines go (default: stdout, written synchronously). */
  readonly destination?: DestinationStream;
  /** The `component` field of every line (default `eso-mtls-controller`): an embedding operator names itself. */
  readonly component?: string;
}

/**
 * The controller's structured JSON logger (one object per line, on stdout by default), each line
 * naming its component. Known key-bearing fields are censored and PEM private keys are scrubbed
 * from every line.
 */
export function createLogger(level: LogLevel, options: LoggerOptions = {}): Logger {
  return pino(
    {
      level,
      base: { component: options.component ?? 'eso-mtls-controller' },
      timestamp: pino.stdTimeFunctions.isoTime,
      formatters: { level: (label) => ({ level: label }) },
      redact: { paths: REDACTED_PATHS, censor: '[REDACTED]' },
      hooks: { streamWrite: scrubPrivateKeys },
    },
    options.destination ?? pino.destination({ dest: 1, sync: true }),
  );
}
