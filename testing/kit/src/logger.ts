import type { Logger } from '@eso-mtls/kubernetes';

/** A logger that keeps every line, for assertions on what was reported. */
export class RecordingLogger implements Logger {
  readonly lines: { level: string; message: string; fields: Record<string, unknown> }[] = [];
  debug(fields: Record<string, unknown>, message: string): void {
    this.lines.push({ level: 'debug', message, fields });
  }
  info(fields: Record<string, unknown>, message: string): void {
    this.lines.push({ level: 'info', message, fields });
  }
  warn(fields: Record<string, unknown>, message: string): void {
    this.lines.push({ level: 'warn', message, fields });
  }
  error(fields: Record<string, unknown>, message: string): void {
    this.lines.push({ level: 'error', message, fields });
  }
  /** Every line as one text, to search. */
  text(): string {
    return this.lines.map((l) => `${l.level} ${l.message} ${JSON.stringify(l.fields)}`).join('\n');
  }
}
