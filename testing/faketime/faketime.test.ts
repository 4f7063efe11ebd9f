// Proves Node works under libfaketime as the soak runs it: a child whose wall clock follows a shared
// offset file across forward jumps (days, then more than a year), whose timers keep real time, whose
// TLS client judges certificate validity by the faked time, and whose gRPC calls over mTLS succeed.
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { type ChildProcessWithoutNullStreams, spawn } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createServer, type Server } from 'node:tls';
import { fileURLToPath } from 'node:url';
import { days, issueCa, issueClientLeaf, issueServerLeaf, type KeyedCertificate, resolvePolicy } from '@eso-mtls/core';
import { createNodeCryptoBackend } from '@eso-mtls/core/node';
import { fakedTimeEnv, parseOffsetFile, SharedTimeOffset } from './faketime.js';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));
const CHILD = 'testing/faketime/test/fixtures/faked-clock.child.ts';
const PROVIDER_NAME = 'file-provider.provider-system.svc';
const FUTURE_NAME = 'future.provider-system.svc';
/** libfaketime re-reads the offset file once per real second; the rest is margin for a loaded machine. */
const PROPAGATION_DEADLINE_MS = 10_000;
/** Date.now() truncates to milliseconds on both sides of the bracket. */
const CLOCK_TOLERANCE_MS = 5;

type Reply = Record<string, unknown>;

/** The child under libfaketime, asked one JSON line at a time. */
class FakedChild {
  private buffered = '';
  private readonly waiting: ((line: string) => void)[] = [];
  private readonly lines: string[] = [];
  stderr = '';

  constructor(readonly process: ChildProcessWithoutNullStreams) {
    process.stdout.on('data', (d: Buffer) => {
      this.buffered += d.toString();
      for (let i = this.buffered.indexOf('\n'); i >= 0; i = this.buffered.indexOf('\n')) {
        const line = this.buffered.slice(0, i);
        this.buffered = this.buffered.slice(i + 1);
        const waiter = this.waiting.shift();
        if (waiter) waiter(line);
        else this.lines.push(line);
      }
    });
    process.stderr.on('data', (d: Buffer) => (this.stderr += d.toString()));
  }

  /** The next line, or a failure naming `what` and the child's stderr after `timeoutMs`. */
  next(what: string, timeoutMs: number): Promise<Reply> {
    const queued = this.lines.shift();
    if (queued !== undefined) return Promise.resolve(JSON.parse(queued) as Reply);
    return new Promise((resolve, reject) => {
      const waiter = (line: string) => (clearTimeout(timer), resolve(JSON.parse(line) as Reply));
      const timer = setTimeout(() => {
        this.waiting.splice(this.waiting.indexOf(waiter), 1);
        reject(new Error(`no answer to ${what} within ${timeoutMs} ms (hung?); child stderr:\n${this.stderr}`));
      }, timeoutMs);
      this.waiting.push(waiter);
    });
  }

  /** Sends one request and returns its result; a failure in the child fails the test. */
  async ask(request: object): Promise<Reply> {
    this.process.stdin.write(`${JSON.stringify(request)}\n`);
    const reply = await this.next(JSON.stringify(request), PROPAGATION_DEADLINE_MS);
    if ('error' in reply) throw new Error(`child failed ${JSON.stringify(request)}: ${String(reply.error)}`);
    return reply.result as Reply;
  }
}

/** Polls `probe` every 100 ms until it returns a value, failing after `timeoutMs` with what it waited for. */
async function until<T>(what: string, probe: () => Promise<T | undefined>, timeoutMs = PROPAGATION_DEADLINE_MS): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await probe();
    if (value !== undefined) return value;
    if (Date.now() > deadline) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

function writeCertDir(ca: KeyedCertificate, leaf: KeyedCertificate): string {
  const dir = mkdtempSync(join(tmpdir(), 'faketime-certs-'));
  writeFileSync(join(dir, 'ca.crt'), ca.certificate.pem);
  writeFileSync(join(dir, 'tls.crt'), leaf.certificate.pem);
  writeFileSync(join(dir, 'tls.key'), leaf.privateKeyPem, { mode: 0o600 });
  return dir;
}

const dirs: string[] = [];
let offset: SharedTimeOffset;
let child: FakedChild;
let caPem: string;
let futureServer: Server;
let futurePort: number;

beforeAll(async () => {
  const crypto = createNodeCryptoBackend();
  const realNow = Date.now();
  // Long-lived CA and gRPC leaves, valid across every jump below; a 90-day leaf that starts 30 days ahead.
  const longLived = resolvePolicy({ caValidity: days(900), leafValidity: days(800) });
  const ca = await issueCa({ crypto, policy: longLived, now: realNow - days(1) });
  caPem = ca.certificate.pem;
  const issued = { crypto, policy: longLived, now: realNow - days(1) };
  dirs.push(writeCertDir(ca, await issueServerLeaf(issued, ca, [PROVIDER_NAME])));
  dirs.push(writeCertDir(ca, await issueClientLeaf(issued, ca)));
  const future = await issueServerLeaf({ crypto, policy: resolvePolicy({ caValidity: days(900) }), now: realNow + days(30) }, ca, [FUTURE_NAME]);

  futureServer = createServer({ cert: future.certificate.pem, key: future.privateKeyPem }, (socket) => socket.end());
  await new Promise<void>((resolve) => futureServer.listen(0, '127.0.0.1', resolve));
  futurePort = (futureServer.address() as { port: number }).port;

  const workDir = mkdtempSync(join(tmpdir(), 'faketime-offset-'));
  dirs.push(workDir);
  offset = new SharedTimeOffset(join(workDir, 'offset'));
  const process_ = spawn(process.execPath, ['--import', './scripts/register-ts.mjs', CHILD, dirs[0]!, dirs[1]!], {
    cwd: ROOT,
    env: fakedTimeEnv(offset),
    stdio: ['pipe', 'pipe', 'pipe'],
  });
  child = new FakedChild(process_);
  expect(await child.next('start-up', 50_000)).toEqual({ ready: true });
});

afterAll(async () => {
  if (child) {
    const exited = new Promise((resolve) => child.process.once('exit', resolve));
    child.process.stdin.end();
    const timer = setTimeout(() => child.process.kill('SIGKILL'), 10_000);
    await exited;
    clearTimeout(timer);
  }
  await new Promise((resolve) => futureServer?.close(resolve));
  for (const dir of dirs) rmSync(dir, { recursive: true, force: true });
});

/** The child's wall clock once it shows real time + `offsetMs`, bracketed by the test's (real) clock. */
async function followedClock(offsetMs: number): Promise<{ before: number; now: number; after: number }> {
  return until(`the child's Date.now() to show the offset ${offsetMs} ms`, async () => {
    const before = Date.now();
    const reply = await child.ask({ op: 'clock' });
    const after = Date.now();
    const now = reply.now as number;
    return Math.abs(now - offsetMs - before) < 1000 ? { before, now, after } : undefined;
  });
}

/** Forward jumps as the soak makes them: days at a time, then more than a year at once. */
const STEPS: readonly { readonly days: number; readonly tls: string | null }[] = [
  { days: 0, tls: 'CERT_NOT_YET_VALID' },
  { days: 1, tls: 'CERT_NOT_YET_VALID' },
  { days: 3, tls: 'CERT_NOT_YET_VALID' },
  { days: 31, tls: null },
  { days: 31 + 400, tls: 'CERT_HAS_EXPIRED' },
];

describe('a Node child under libfaketime with a moving shared offset', () => {
  it('writes the offset file in the form libfaketime reads, and reads it back', () => {
    offset.set(-days(2) - 1);
    expect(offset.get()).toBe(-days(2) - 1);
    offset.set(0);
    expect(offset.get()).toBe(0);
    expect(() => offset.set(0.5)).toThrow(/whole number of milliseconds/);
    expect(parseOffsetFile('+86400.250\n')).toBe(86_400_250);
    expect(() => parseOffsetFile('+1d')).toThrow(/not an offset such as \+86400\.000/);
  });

  for (const step of STEPS) {
    it(`at +${step.days} days: clock, timers, certificate validity and a gRPC call all follow`, async () => {
      const offsetMs = days(step.days);
      offset.set(offsetMs);

      // 1. Date.now() is real time + offset, to the millisecond.
      const clock = await followedClock(offsetMs);
      expect(clock.now - offsetMs).toBeGreaterThanOrEqual(clock.before - CLOCK_TOLERANCE_MS);
      expect(clock.now - offsetMs).toBeLessThanOrEqual(clock.after + CLOCK_TOLERANCE_MS);

      // 2. Timers keep firing on real time after the jump.
      const ticks = await child.ask({ op: 'clock' });
      await until('setInterval and setTimeout to fire 5 more times', async () => {
        const now = await child.ask({ op: 'clock' });
        const ran = (k: string) => (now[k] as number) - (ticks[k] as number) >= 5;
        return ran('intervalTicks') && ran('timeoutTicks') ? true : undefined;
      });

      // 3. OpenSSL in the child judges the server certificate (notBefore 30 real days ahead) by the faked time.
      const verdict = await child.ask({ op: 'tls', port: futurePort, ca: caPem, servername: FUTURE_NAME });
      expect(verdict).toEqual({ authorized: step.tls === null, error: step.tls });

      // 4. A gRPC call over mTLS (fresh handshake) between a provider and a client both under libfaketime.
      const before = Date.now();
      const call = await child.ask({ op: 'grpc', address: `${PROVIDER_NAME}:8080` });
      const providerNow = (call.providerNow as number) - offsetMs;
      expect(providerNow).toBeGreaterThanOrEqual(before - CLOCK_TOLERANCE_MS);
      expect(providerNow).toBeLessThanOrEqual(Date.now() + CLOCK_TOLERANCE_MS);
    });
  }
});
