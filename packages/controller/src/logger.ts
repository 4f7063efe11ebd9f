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

/**
 * The controller's structured JSON logger (one object per line on `destination`, stdout by
 * default). Known key-bearing fields are censored and PEM private keys are scrubbed from every line.
 */
export function createLogger(level: LogLevel, destination?: DestinationStream): Logger {
  return pino(
    {
      level,
      base: { component: 'eso-mtls-controller' },
      timestamp: pino.stdTimeFunctions.isoTime,
      formatters: { level: (label) => ({ level: label }) },
      redact: { paths: REDACTED_PATHS, censor: '[REDACTED]' },
      hooks: { streamWrite: scrubPrivateKeys },
    },
    destination ?? pino.destination({ dest: 1, sync: true }),
  );
}
