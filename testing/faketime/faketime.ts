// Faked wall clocks for child processes: Debian's libfaketime preloaded into them, all reading one
// moving offset from a shared file, while the monotonic clock stays real so timers fire on time.
import { execFileSync } from 'node:child_process';
import { readFileSync, renameSync, writeFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

const ENSURE_SCRIPT = fileURLToPath(new URL('../../scripts/ensure-faketime.sh', import.meta.url));
/** Offsets beyond this many milliseconds (about 100 years) are refused: no test needs them, and a unit slip would. */
const MAX_OFFSET_MS = 100 * 365 * 86_400_000;

let cachedPath: string | undefined;

/** The path of libfaketimeMT.so.1, from scripts/ensure-faketime.sh (which installs it when missing); run once. */
function libfaketimePath(): string {
  cachedPath ??= execFileSync('bash', [ENSURE_SCRIPT], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'inherit'] }).trim();
  return cachedPath;
}

/** libfaketime's relative form: a sign, then seconds with millisecond decimals ("+86400.000"). */
function formatOffset(offsetMs: number): string {
  if (!Number.isInteger(offsetMs) || Math.abs(offsetMs) > MAX_OFFSET_MS) {
    throw new RangeError(`time offset ${offsetMs} ms must be a whole number of milliseconds within ±${MAX_OFFSET_MS} ms (100 years)`);
  }
  return `${offsetMs < 0 ? '-' : '+'}${(Math.abs(offsetMs) / 1000).toFixed(3)}`;
}

/**
 * The offset in milliseconds that an offset file's content (as {@link SharedTimeOffset.set} writes it)
 * stands for; for processes that add it to their real clock themselves instead of preloading libfaketime.
 */
export function parseOffsetFile(text: string): number {
  const m = /^([+-])(\d+)\.(\d{3})$/.exec(text.trim());
  if (!m) throw new Error(`time offset file holds ${JSON.stringify(text.slice(0, 40))}, not an offset such as +86400.000`);
  return (m[1] === '-' ? -1 : 1) * (Number(m[2]) * 1000 + Number(m[3]));
}

/**
 * The offset every faked process adds to the real wall clock, kept in one file. Writes are atomic
 * (temporary file, then rename), so a reader sees the old offset or the new one, never a torn line
 * and never a missing file (libfaketime would then fall back to ~/.faketimerc).
 */
export class SharedTimeOffset {
  /** Creates (or overwrites) `file` with `initialMs`. */
  constructor(
    /** The file libfaketime reads through FAKETIME_TIMESTAMP_FILE. */
    readonly file: string,
    initialMs = 0,
  ) {
    this.set(initialMs);
  }

  /** Moves every faked clock to real time + `offsetMs`; running processes see it within about a second. */
  set(offsetMs: number): void {
    const line = `${formatOffset(offsetMs)}\n`;
    const tmp = `${this.file}.${process.pid}.tmp`;
    writeFileSync(tmp, line);
    renameSync(tmp, this.file);
  }

  /** The offset in the file now, in milliseconds. */
  get(): number {
    return parseOffsetFile(readFileSync(this.file, 'utf8'));
  }
}

/**
 * A child's environment: `base` plus what makes its wall clock real time + `offset`:
 * - libfaketimeMT.so.1, not libfaketime.so.1: the plain library refreshes its cached offset in
 *   unsynchronised statics, and Node reads the wall clock from several threads at once (OpenSSL
 *   reseeding its DRBG on the libuv pool during key generation, seen with gdb); the MT one
 *   serialises that, at about 0.9 µs per wall-clock read instead of 0.09 µs (Node 24, measured);
 * - FAKETIME_DONT_FAKE_MONOTONIC: libuv's timers and performance.now() keep real time, untouched;
 * - FAKETIME_FORCE_MONOTONIC_FIX=0: 0.9.10 turns this fix on by itself for glibc >= 2.30 (Debian 12
 *   has 2.36), and with it every pthread_cond_timedwait on a CLOCK_MONOTONIC condition variable
 *   returns ETIMEDOUT at once (measured: 0 ms for a 200 ms wait), a busy loop for any thread that
 *   waits that way; with 0 such a wait lasts its real 200 ms, at any offset;
 * - FAKETIME_CACHE_DURATION=0: the file is re-read once per real second (its check compares whole
 *   seconds), so a jump shows within about 1 s; the default (10) can take 11 s, and
 *   FAKETIME_NO_CACHE=1 re-reads the file on every clock read (about 11 µs each).
 */
export function fakedTimeEnv(offset: SharedTimeOffset, base: NodeJS.ProcessEnv = process.env): NodeJS.ProcessEnv {
  return {
    ...base,
    LD_PRELOAD: libfaketimePath(),
    FAKETIME_TIMESTAMP_FILE: offset.file,
    FAKETIME_DONT_FAKE_MONOTONIC: '1',
    FAKETIME_FORCE_MONOTONIC_FIX: '0',
    FAKETIME_CACHE_DURATION: '0',
  };
}
