/**
 * The structured logger the adapter writes to: pino's call shape (`log.info({ namespace }, 'msg')`),
 * so the controller can pass a pino instance. Fields never carry key material.
 */
export interface Logger {
  /** Detail for troubleshooting. */
  debug(fields: Record<string, unknown>, message: string): void;
  /** Normal progress: an issuance, a rotation, a leadership change. */
  info(fields: Record<string, unknown>, message: string): void;
  /** Something refused or retried that needs no action yet. */
  warn(fields: Record<string, unknown>, message: string): void;
  /** A failure someone should look at. */
  error(fields: Record<string, unknown>, message: string): void;
}

/** A logger that drops everything (the default). */
export const silentLogger: Logger = { debug: () => undefined, info: () => undefined, warn: () => undefined, error: () => undefined };
