import { type ChildProcess, execFileSync, spawn } from 'node:child_process';
import { X509Certificate, createPrivateKey } from 'node:crypto';
import { existsSync } from 'node:fs';
import { mkdir, mkdtemp, readFile, readdir, rm, symlink, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { CertificateWatcher, type ReloadFailure } from '@eso-mtls/grpc';
import { repoRoot } from '@eso-mtls/test-kit/repo';
import { runDevCertsCommand } from '../src/cli/dev-certs.js';
import { capture } from './support/cli-streams.js';

// `dev-certs --once`, `--validity` and the one-run-per-folder lock, with real folders, real
// certificates judged by openssl and by the grpc package's CertificateWatcher, and two real
// processes of the built CLI on one folder.

const EVENT_BOUND_MS = 120_000;
const LOCK = '.eso-mtls-dev-certs.lock';

async function devCerts(argv: readonly string[], signal?: AbortSignal): Promise<{ code: number; out: string; err: string }> {
  const c = capture();
  const code = await runDevCertsCommand(argv, c.streams, signal);
  return { code, out: c.out(), err: c.err() };
}

async function until(what: string, condition: () => boolean): Promise<void> {
  const deadline = Date.now() + EVENT_BOUND_MS;
  while (!condition()) {
    if (Date.now() > deadline) throw new Error(`gave up waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

/** openssl's verdict on a certificate `seconds` from now: true if it will have expired by then. */
function expiresWithin(certificate: string, seconds: number): boolean {
  try {
    execFileSync('openssl', ['x509', '-in', certificate, '-noout', '-checkend', String(seconds)], { stdio: 'pipe' });
    return false;
  } catch (e) {
    if ((e as { status?: number }).status === 1) return true;
    throw e;
  }
}

const opensslDate = (certificate: string, field: 'startdate' | 'enddate'): number =>
  Date.parse(
    execFileSync('openssl', ['x509', '-in', certificate, '-noout', `-${field}`], { encoding: 'utf8' })
      .split('=')[1]!
      .trim(),
  );

/** The first refusal a real CertificateWatcher makes of `directory`. */
async function watcherRefusal(directory: string, purpose: 'serverAuth' | 'clientAuth'): Promise<ReloadFailure> {
  const watcher = new CertificateWatcher({ directory, purpose, log: false });
  try {
    const refused = new Promise<ReloadFailure>((r) => watcher.onFailure(r));
    const loaded = watcher.start().then(() => 'loaded' as const);
    const outcome = await Promise.race([refused, loaded]);
    if (outcome === 'loaded') throw new Error(`the watcher loaded ${directory}; expected a refusal`);
    return outcome;
  } finally {
    watcher.close();
  }
}

let base: string;
beforeAll(async () => {
  base = await mkdtemp(join(tmpdir(), 'eso-mtls-dev-certs-once-'));
});
afterAll(() => rm(base, { recursive: true, force: true }));
let count = 0;
const fresh = (): string => join(base, `dir-${++count}`);

describe('eso-mtls dev-certs --help', () => {
  it('names every flag, and says what happens with --once, with --rotate-every and with neither', async () => {
    const help = await devCerts(['--help']);
    expect(help.code).toBe(0);
    for (const flag of ['--dir', '--provider', '--once', '--rotate-every', '--ca-rotation', '--validity']) expect(help.out).toContain(`  ${flag} `);
    expect(help.out).toContain('then keeps running until Ctrl-C: rotating them\nwith --rotate-every, otherwise leaving them as written');
    expect(help.out).toContain('With --once it\nexits 0 as soon as they are written.');
    expect(help.out).not.toContain('written once');
  });
});

describe('eso-mtls dev-certs --once', () => {
  it('writes the folders, prints where, and exits 0 without a signal, leaving no lock', async () => {
    const dir = fresh();
    const run = await devCerts(['--dir', dir, '--provider', 'aws', '--once']);
    expect(run.err).toBe('');
    expect(run.code).toBe(0);
    expect(run.out).toContain(`eso-mtls dev-certs: certificates written under ${dir}\n`);
    expect(run.out).toContain(`  provider aws.provider-system.svc  ${join(dir, 'aws.provider-system')}\n`);
    expect(run.out).toContain('Written once (--once); exiting. A later run issues a new CA.\n');
    expect(run.out).not.toContain('Ctrl-C');
    expect((await readdir(dir)).sort()).toEqual(['.eso-mtls-dev-certs', 'aws.provider-system', 'ca', 'eso-client']);
    for (const folder of ['aws.provider-system', 'eso-client']) {
      const certificate = new X509Certificate(await readFile(join(dir, folder, 'tls.crt')));
      expect(certificate.checkPrivateKey(createPrivateKey(await readFile(join(dir, folder, 'tls.key'))))).toBe(true);
      expect(certificate.verify(new X509Certificate(await readFile(join(dir, 'ca', 'ca.crt'))).publicKey)).toBe(true);
      expect(expiresWithin(join(dir, folder, 'tls.crt'), 0)).toBe(false);
    }
  });
});

describe('eso-mtls dev-certs --validity', () => {
  it('expired: every leaf expired a day ago by openssl, the CA still valid, and a provider and ESO refuse the folders with reason expired', async () => {
    const dir = fresh();
    const run = await devCerts(['--dir', dir, '--provider', 'aws', '--once', '--validity', 'expired']);
    expect(run.err).toBe('');
    expect(run.code).toBe(0);
    expect(run.out).toContain('Every leaf is already expired (--validity expired).\n');
    for (const folder of ['aws.provider-system', 'eso-client']) {
      expect(expiresWithin(join(dir, folder, 'tls.crt'), 0)).toBe(true);
      const notAfter = opensslDate(join(dir, folder, 'tls.crt'), 'enddate');
      expect(Date.now() - notAfter).toBeGreaterThan(23 * 3_600_000);
    }
    expect(expiresWithin(join(dir, 'ca', 'ca.crt'), 0)).toBe(false);
    const server = await watcherRefusal(join(dir, 'aws.provider-system'), 'serverAuth');
    expect(server.reason).toBe('expired');
    expect(server.message).toContain('expired at');
    expect((await watcherRefusal(join(dir, 'eso-client'), 'clientAuth')).reason).toBe('expired');
  });

  it('not-yet-valid: every leaf valid only from a day ahead by openssl, and refused with reason not_yet_valid', async () => {
    const dir = fresh();
    const run = await devCerts(['--dir', dir, '--provider', 'aws', '--once', '--validity', 'not-yet-valid']);
    expect(run.err).toBe('');
    expect(run.code).toBe(0);
    expect(run.out).toContain('Every leaf is not yet valid (--validity not-yet-valid).\n');
    for (const folder of ['aws.provider-system', 'eso-client']) {
      const notBefore = opensslDate(join(dir, folder, 'tls.crt'), 'startdate');
      expect(notBefore - Date.now()).toBeGreaterThan(23 * 3_600_000);
    }
    const server = await watcherRefusal(join(dir, 'aws.provider-system'), 'serverAuth');
    expect(server.reason).toBe('not_yet_valid');
    expect((await watcherRefusal(join(dir, 'eso-client'), 'clientAuth')).reason).toBe('not_yet_valid');
  });
});

describe('eso-mtls dev-certs: one run per folder', () => {
  it('refuses a second run in the same process on the folder, naming the first; the folder is free again once it stops', async () => {
    const dir = fresh();
    const c = capture();
    const stop = new AbortController();
    const first = runDevCertsCommand(['--dir', dir], c.streams, stop.signal);
    try {
      await until('the ready line', () => c.out().includes('Press Ctrl-C to stop.') || c.err() !== '');
      expect(c.err()).toBe('');
      const tls = await readFile(join(dir, 'eso-client', 'tls.crt'), 'utf8');
      const second = await devCerts(['--dir', dir, '--once']);
      expect(second.code).toBe(1);
      expect(second.err).toBe(
        `eso-mtls dev-certs: another eso-mtls dev-certs (PID ${process.pid}) is writing ${dir}, with its own CA; stop it first (kill ${process.pid}) or give --dir another folder. If PID ${process.pid} is not eso-mtls dev-certs, remove ${join(dir, LOCK)}\n`,
      );
      // The refused run wrote nothing: the first run's certificate is still there.
      expect(await readFile(join(dir, 'eso-client', 'tls.crt'), 'utf8')).toBe(tls);
      expect(await readFile(join(dir, LOCK), 'utf8')).toBe(`${process.pid}\n`);
    } finally {
      stop.abort();
      expect(await first).toBe(0);
    }
    expect(await readdir(dir)).not.toContain(LOCK);
    expect((await devCerts(['--dir', dir, '--once'])).code).toBe(0);
  });

  it('takes over a lock left by a process that is gone', async () => {
    const dir = fresh();
    await mkdir(dir);
    const gone = spawn(process.execPath, ['-e', '']);
    const pid = gone.pid!;
    await new Promise((r) => gone.once('exit', r));
    await writeFile(join(dir, LOCK), `${pid}\n`);
    const run = await devCerts(['--dir', dir, '--once']);
    expect(run.err).toBe('');
    expect(run.code).toBe(0);
    expect(await readdir(dir)).not.toContain(LOCK);
  });

  it('refuses a lock that is a link, and writes nothing through it', async () => {
    const dir = fresh();
    await mkdir(dir);
    const elsewhere = join(base, `elsewhere-${count}`);
    await writeFile(elsewhere, 'not a PID');
    await symlink(elsewhere, join(dir, LOCK));
    const run = await devCerts(['--dir', dir, '--once']);
    expect(run.err).toBe(`eso-mtls dev-certs: ${join(dir, LOCK)} is a symlink to ${elsewhere}, not the lock file dev-certs makes; remove it\n`);
    expect(run.code).toBe(1);
    expect(await readFile(elsewhere, 'utf8')).toBe('not a PID');
    expect((await readdir(dir)).sort()).toEqual([LOCK]);
  });

  describe('two processes of the built CLI', () => {
    const CLI = resolve(repoRoot, 'packages/controller/dist/bin/eso-mtls.js');
    const children: ChildProcess[] = [];
    afterAll(() => children.forEach((c) => c.exitCode === null && c.signalCode === null && c.kill('SIGKILL')));

    function start(args: readonly string[]): { child: ChildProcess; out: () => string; err: () => string; exited: Promise<number | null> } {
      const child = spawn(process.execPath, [CLI, 'dev-certs', ...args], { cwd: repoRoot, stdio: ['ignore', 'pipe', 'pipe'] });
      children.push(child);
      let out = '';
      let err = '';
      child.stdout!.on('data', (d: Buffer) => (out += d.toString()));
      child.stderr!.on('data', (d: Buffer) => (err += d.toString()));
      const exited = new Promise<number | null>((r) => child.once('exit', (code) => r(code)));
      return { child, out: () => out, err: () => err, exited };
    }

    it('the second is refused naming the first one’s PID, and runs once the first has stopped', async () => {
      if (!existsSync(CLI)) throw new Error(`${CLI} is missing: run \`npm run build -w packages/controller -w packages/devtools\` first`);
      const dir = fresh();
      const first = start(['--dir', dir]);
      await until('the first ready', () => first.out().includes('Press Ctrl-C to stop.') || first.child.exitCode !== null);
      expect(first.err()).toBe('');
      const second = start(['--dir', dir, '--once']);
      expect(await second.exited).toBe(1);
      expect(second.err()).toContain(`eso-mtls dev-certs: another eso-mtls dev-certs (PID ${first.child.pid}) is writing ${dir}, with its own CA`);
      expect(second.out()).toBe('');
      first.child.kill('SIGINT');
      expect(await first.exited).toBe(0);
      expect(await readdir(dir)).not.toContain(LOCK);
      const third = start(['--dir', dir, '--once']);
      expect(await third.exited).toBe(0);
      expect(third.out()).toContain('Written once (--once); exiting.');
    }, 180_000);

    it('a lock left by a killed run (SIGKILL) is taken over by the next', async () => {
      if (!existsSync(CLI)) throw new Error(`${CLI} is missing: run \`npm run build -w packages/controller -w packages/devtools\` first`);
      const dir = fresh();
      const killed = start(['--dir', dir]);
      await until('the ready line', () => killed.out().includes('Press Ctrl-C to stop.') || killed.child.exitCode !== null);
      killed.child.kill('SIGKILL');
      await killed.exited;
      expect(await readFile(join(dir, LOCK), 'utf8')).toBe(`${killed.child.pid}\n`);
      const next = start(['--dir', dir, '--once']);
      expect(await next.exited).toBe(0);
      expect(next.err()).toBe('');
      expect(await readdir(dir)).not.toContain(LOCK);
    }, 180_000);
  });
});
