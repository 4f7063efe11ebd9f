/** Who did what a timeline line reports. */
export type EventSource = 'demo' | 'scenario' | 'controller' | 'kubelet' | 'provider' | 'eso';

/** One line of the timeline. */
export interface DemoEvent {
  readonly source: EventSource;
  /** What it happened to: `namespace/provider-aws`, `client`, `CA`. */
  readonly subject: string;
  readonly message: string;
  /** The rotation reason or refusal reason, when there is one. */
  readonly reason?: string;
}

/** Where the timeline goes: stdout, or a test's buffer. */
export interface TimelineOutput {
  write(text: string): unknown;
  /** Set on a terminal; the progress line is drawn only there (see isTerminal in cli/terminal.ts). */
  readonly isTTY?: boolean;
}

/** Options of {@link Timeline}. */
export interface TimelineOptions {
  /** One JSON object per line (ISO timestamps) instead of text. */
  readonly json: boolean;
  /** The wall clock. */
  readonly now: () => number;
  /** Calls made and failed so far, for the "since the last line" columns. */
  readonly calls: () => { readonly made: number; readonly failed: number };
  /** The live progress line's text; give it only when the output is a person's terminal. */
  readonly progress?: () => string;
}

const CLEAR_LINE = '\r\x1b[2K';

/**
 * Prints the demo's events as they happen, each with the calls made and failed since the line
 * before, so a rotation and the calls around it read together. With a progress line (a terminal,
 * text mode) it stays at the bottom and is redrawn; otherwise only plain lines are written.
 */
export class Timeline {
  private readonly start: number;
  private last = { made: 0, failed: 0 };
  private progressTimer: NodeJS.Timeout | undefined;
  private progressShown = false;

  constructor(
    private readonly out: TimelineOutput,
    private readonly options: TimelineOptions,
  ) {
    this.start = options.now();
  }

  /** Writes the text heading of the event columns (text mode only). */
  heading(): void {
    if (!this.options.json) this.line(`  ${'elapsed'.padStart(8)}  ${'calls ok/failed'.padEnd(15)}  ${'source'.padEnd(10)}  event`);
  }

  /** Prints one event that happened at `at` (default now). */
  record(event: DemoEvent, at: number = this.options.now()): void {
    const now = at;
    const calls = this.options.calls();
    const ok = calls.made - calls.failed - (this.last.made - this.last.failed);
    const failed = calls.failed - this.last.failed;
    this.last = { ...calls };
    if (this.options.json) {
      this.line(
        JSON.stringify({
          time: new Date(now).toISOString(),
          elapsedMs: now - this.start,
          source: event.source,
          subject: event.subject,
          event: event.message,
          ...(event.reason === undefined ? {} : { reason: event.reason }),
          callsOk: ok,
          callsFailed: failed,
        }),
      );
      return;
    }
    const elapsed = `+${((now - this.start) / 1000).toFixed(1)}s`.padStart(8);
    const counts = `+${ok} / ${failed}`.padEnd(15);
    const reason = event.reason === undefined ? '' : ` [${event.reason}]`;
    this.line(`  ${elapsed}  ${counts}  ${event.source.padEnd(10)}  ${event.subject}: ${event.message}${reason}`);
  }

  /** Prints a JSON object (JSON mode) with a timestamp, or text lines (text mode). */
  print(text: string, json: Record<string, unknown>): void {
    if (this.options.json) this.line(JSON.stringify({ time: new Date(this.options.now()).toISOString(), ...json }));
    else this.line(text);
  }

  /** Starts redrawing the progress line, if one was given (text mode only). */
  startProgress(intervalMs = 250): void {
    if (this.options.json || this.options.progress === undefined || this.progressTimer) return;
    this.progressTimer = setInterval(() => this.drawProgress(), intervalMs);
    this.drawProgress();
  }

  /** Stops and erases the progress line. */
  stopProgress(): void {
    clearInterval(this.progressTimer);
    this.progressTimer = undefined;
    if (this.progressShown) this.out.write(CLEAR_LINE);
    this.progressShown = false;
  }

  private drawProgress(): void {
    this.out.write(`${CLEAR_LINE}${this.options.progress!()}`);
    this.progressShown = true;
  }

  private line(text: string): void {
    if (this.progressShown) this.out.write(CLEAR_LINE);
    this.out.write(`${text}\n`);
    if (this.progressShown) this.drawProgress();
  }
}
