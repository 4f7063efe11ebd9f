import { afterEach, beforeAll, describe, expect, it } from '@jest/globals';
import { execFileSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, readlinkSync, renameSync, rmSync, symlinkSync, truncateSync, writeFileSync } from 'node:fs';
import { mkdir } from 'node:fs/promises';
import { createServer, type Server } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { X509Certificate } from 'node:crypto';
import { issueServerLeaf, type KeyedCertificate } from '@eso-mtls/core';
import { createNodeCryptoBackend } from '@eso-mtls/core/node';
import { CertificateWatcher, MAX_MOUNTED_FILE_BYTES, readMountedFile, type ReloadFailure, type TlsMaterial } from '@eso-mtls/grpc';
import { writeAtomically } from '@eso-mtls/test-kit/demo';
import { issueTestCa, issueTestClient, issueTestServer, TEST_POLICY, TEST_SERVER_NAME, type KeyPair, type TestCa } from '@eso-mtls/test-kit/pki';

const serial = (pem: string) => new X509Certificate(pem).serialNumber.toLowerCase();
const secret = (ca: string, leaf: KeyPair) => ({ 'ca.crt': ca, 'tls.crt': leaf.cert, 'tls.key': leaf.key });

/** The next swap or counted failure of `watcher`; rejects after 5 s without either. */
function nextEvent(watcher: CertificateWatcher): Promise<{ material?: TlsMaterial; failure?: ReloadFailure }> {
  return new Promise((resolve, reject) => {
    const done = () => (clearTimeout(timer), offs.forEach((f) => f()));
    const timer = setTimeout(() => (done(), reject(new Error(`no swap or failure from ${watcher.directory} within 5 s`))), 5000);
    const offs = [watcher.onMaterial((material) => (done(), resolve({ material }))), watcher.onFailure((failure) => (done(), resolve({ failure })))];
  });
}

let ca: TestCa;
let otherCa: TestCa;
let first: KeyPair;
let second: KeyPair;
/** Writes a good pair with `leaf` and expects it loaded: the one reload after one counted failure. */
async function expectRecoveryWith(watcher: CertificateWatcher, dir: string, leaf: KeyPair): Promise<void> {
  const recovered = nextEvent(watcher);
  await writeAtomically(dir, secret(ca.cert, leaf));
  expect((await recovered).material?.serialNumber).toBe(serial(leaf.cert));
  expect(watcher.stats).toEqual({ loads: 2, reloads: 1, failures: 1 });
}

const dirs: string[] = [];
const watchers: CertificateWatcher[] = [];

function folder(): string {
  const dir = mkdtempSync(join(tmpdir(), 'watcher-'));
  dirs.push(dir);
  return dir;
}
function watcherOn(dir: string, options: Partial<ConstructorParameters<typeof CertificateWatcher>[0]> = {}): CertificateWatcher {
  // An hour-long poll: whatever these tests see arrived through the folder watch, unless they poll.
  // Unlogged: the refusals these tests provoke are counted here; watcher-start.test.ts tests the log.
  const w = new CertificateWatcher({ directory: dir, purpose: 'serverAuth', pollIntervalMs: 3_600_000, log: false, ...options });
  watchers.push(w);
  return w;
}

/** A watcher that has loaded `first` from a fresh folder, and the failures it counts from then on. */
async function loadedWatcher(): Promise<{ dir: string; watcher: CertificateWatcher; failures: ReloadFailure[] }> {
  const dir = folder();
  await writeAtomically(dir, secret(ca.cert, first));
  const watcher = watcherOn(dir);
  await watcher.start();
  const failures: ReloadFailure[] = [];
  watcher.onFailure((f) => failures.push(f));
  return { dir, watcher, failures };
}

beforeAll(async () => {
  ca = await issueTestCa();
  otherCa = await issueTestCa();
  first = await issueTestServer(ca);
  second = await issueTestServer(ca);
});

afterEach(() => {
  watchers.splice(0).forEach((w) => w.close());
  dirs.splice(0).forEach((d) => rmSync(d, { recursive: true, force: true }));
});

describe('loading what the kubelet mounted', () => {
  it('reads ca.crt, tls.crt and tls.key through ..data and resolves start() with checked material', async () => {
    const dir = folder();
    await writeAtomically(dir, secret(ca.cert, first));
    expect(readlinkSync(join(dir, 'tls.crt'))).toBe('..data/tls.crt');
    const watcher = watcherOn(dir);
    const material = await watcher.start();
    expect(material.serialNumber).toBe(serial(first.cert));
    expect(material.caCertificates.map((c) => c.serialNumber.toLowerCase())).toEqual([serial(ca.cert)]);
    expect(material.notAfter).toBe(Date.parse(new X509Certificate(first.cert).validTo));
    expect([watcher.ready, watcher.stats]).toEqual([true, { loads: 1, reloads: 0, failures: 0 }]);
  });

  it('keeps retrying until the Secret appears: start() resolves once a good pair is there', async () => {
    const dir = join(folder(), 'certs');
    const watcher = watcherOn(dir, { pollIntervalMs: 20 });
    const failures: ReloadFailure[] = [];
    watcher.onFailure((f) => failures.push(f));
    const started = watcher.start();
    // The first failed read, however long a loaded machine takes to make it; then a few more polls.
    while (failures.length === 0) await new Promise((r) => setTimeout(r, 10));
    await new Promise((r) => setTimeout(r, 60));
    expect(watcher.ready).toBe(false);
    expect(failures.map((f) => f.reason)).toEqual(['not_found']);
    expect(failures[0]!.message).toContain(`cannot read ${join(dir, 'tls.crt')}`);
    await mkdir(dir);
    await writeAtomically(dir, secret(ca.cert, first));
    expect((await started).serialNumber).toBe(serial(first.cert));
  });

  it('a read in flight when close() is called counts and reports nothing, even if the folder is gone by then', async () => {
    const { dir, watcher, failures } = await loadedWatcher();
    await watcher.check(); // the first load's read has ended, so the next check() starts a read of its own
    // As a provider's stop does: the read starts, the watcher is closed, then the owner removes the folder.
    const reading = watcher.check();
    watcher.close();
    rmSync(dir, { recursive: true, force: true });
    await reading;
    expect([failures, watcher.stats]).toEqual([[], { loads: 1, reloads: 0, failures: 0 }]);
    expect(watcher.current?.serialNumber).toBe(serial(first.cert));
  });

  it('close() before the first good load rejects start()', async () => {
    const watcher = watcherOn(join(folder(), 'never'));
    const started = watcher.start();
    watcher.close();
    await expect(started).rejects.toThrow(/closed before good material was loaded/);
  });
});

describe('following the ..data swap', () => {
  it('a kubelet swap is picked up from the folder watch, and counted as a reload', async () => {
    const dir = folder();
    await writeAtomically(dir, secret(ca.cert, first));
    const watcher = watcherOn(dir);
    await watcher.start();
    const swapped = nextEvent(watcher);
    await writeAtomically(dir, secret(ca.cert, second));
    expect((await swapped).material?.serialNumber).toBe(serial(second.cert));
    expect(watcher.current?.serialNumber).toBe(serial(second.cert));
    expect(watcher.stats).toEqual({ loads: 2, reloads: 1, failures: 0 });
  });

  it('a change no folder event reports (written inside the timestamped folder) is found by polling, comparing bytes', async () => {
    const dir = folder();
    const { timestampedDir } = await writeAtomically(dir, secret(ca.cert, first));
    const watcher = watcherOn(dir, { pollIntervalMs: 25 });
    await watcher.start();
    const swapped = nextEvent(watcher);
    // One file replaced by rename inside the timestamped folder: atomic, and invisible to a watch on the mount folder.
    writeFileSync(join(dir, timestampedDir, 'ca.crt.tmp'), ca.cert + otherCa.cert);
    renameSync(join(dir, timestampedDir, 'ca.crt.tmp'), join(dir, timestampedDir, 'ca.crt'));
    const { material } = await swapped;
    expect(material?.serialNumber).toBe(serial(first.cert));
    expect(material?.caCertificates.map((c) => c.serialNumber.toLowerCase())).toEqual([serial(ca.cert), serial(otherCa.cert)]);
    // Re-reading identical bytes on later polls is neither a reload nor a failure.
    await new Promise((r) => setTimeout(r, 80));
    expect(watcher.stats).toEqual({ loads: 2, reloads: 1, failures: 0 });
  });
});

describe('a bad pair on disk keeps the last good one and counts a failure', () => {
  const crypto = createNodeCryptoBackend();
  const leafAt = async (now: number): Promise<KeyPair> => {
    const k: KeyedCertificate = await issueServerLeaf({ crypto, policy: TEST_POLICY, now }, ca.keyed, [TEST_SERVER_NAME]);
    return { cert: k.certificate.pem, key: k.privateKeyPem };
  };

  it.each([
    [
      'corrupt',
      async () => ({ 'ca.crt': ca.cert, 'tls.crt': '-----BEGIN CERTIFICATE-----\nnot base64!\n-----END CERTIFICATE-----\n', 'tls.key': second.key }),
      'garbage_pem',
      /tls.crt is not a PEM certificate list/,
    ],
    ['empty', async () => ({ 'ca.crt': '', 'tls.crt': '', 'tls.key': '' }), 'empty', /all empty/],
    [
      'half-written (only tls.crt updated)',
      async () => ({ 'ca.crt': ca.cert, 'tls.crt': second.cert, 'tls.key': first.key }),
      'key_mismatch',
      /tls.key is not the private key of tls.crt/,
    ],
    ["mismatched (another leaf's key)", async () => ({ 'ca.crt': ca.cert, 'tls.crt': first.cert, 'tls.key': second.key }), 'key_mismatch', /half-updated pair/],
    ['signed by a CA not in ca.crt', async () => secret(ca.cert, await issueTestServer(otherCa)), 'untrusted', /is not signed by any CA in ca.crt/],
    [
      'a client certificate where a server certificate belongs',
      async () => secret(ca.cert, await issueTestClient(ca)),
      'wrong_purpose',
      /lacks extendedKeyUsage serverAuth/,
    ],
    [
      'a leaf in ca.crt',
      async () => ({ 'ca.crt': second.cert, 'tls.crt': first.cert, 'tls.key': first.key }),
      'not_a_ca',
      /ca.crt holds .* which is not a CA certificate/,
    ],
    ['expired', async () => secret(ca.cert, await leafAt(Date.now() - TEST_POLICY.leafValidity - 3_600_000)), 'expired', /expired at/],
    ['not yet valid', async () => secret(ca.cert, await leafAt(Date.now() + 86_400_000)), 'not_yet_valid', /is valid only from/],
  ])('%s', async (_name, payload, reason, message) => {
    const dir = folder();
    await writeAtomically(dir, secret(ca.cert, first));
    const watcher = watcherOn(dir);
    await watcher.start();

    const refused = nextEvent(watcher);
    await writeAtomically(dir, await payload());
    const { failure } = await refused;
    expect(failure?.reason).toBe(reason);
    expect(failure?.message).toMatch(message);
    expect(watcher.current?.serialNumber).toBe(serial(first.cert));
    expect(watcher.stats).toEqual({ loads: 1, reloads: 0, failures: 1 });

    // Reading the same bad bytes again is the same failure, not a new one.
    await watcher.check();
    expect(watcher.stats.failures).toBe(1);

    await expectRecoveryWith(watcher, dir, second);
  });

  it('validity is judged by the injected clock, with the skew tolerance at both ends', async () => {
    const dir = folder();
    await writeAtomically(dir, secret(ca.cert, first));
    const notBefore = Date.parse(new X509Certificate(first.cert).validFrom);
    const secondNotAfter = Date.parse(new X509Certificate(second.cert).validTo);
    let now = notBefore - 4 * 60_000;
    const watcher = watcherOn(dir, { now: () => now, clockSkewToleranceMs: 5 * 60_000 });
    expect((await watcher.start()).serialNumber).toBe(serial(first.cert));

    now = secondNotAfter + 6 * 60_000;
    const refused = nextEvent(watcher);
    await writeAtomically(dir, secret(ca.cert, second));
    expect((await refused).failure?.reason).toBe('expired');

    // The same bytes are judged again on the next read: within tolerance now, so they load.
    now = secondNotAfter + 4 * 60_000;
    await watcher.check();
    expect(watcher.current?.serialNumber).toBe(serial(second.cert));
  });

  it('a bundle holding the old and the next CA trusts leaves of either (CA rotation overlap)', async () => {
    const dir = folder();
    await writeAtomically(dir, secret(ca.cert, first));
    const watcher = watcherOn(dir, { purpose: 'serverAuth' });
    await watcher.start();
    const nextLeaf = await issueTestServer(otherCa);
    const swapped = nextEvent(watcher);
    await writeAtomically(dir, secret(ca.cert + otherCa.cert, nextLeaf));
    const { material } = await swapped;
    expect(material?.serialNumber).toBe(serial(nextLeaf.cert));
    expect(material?.caCertificates).toHaveLength(2);
  });
});

describe('files that are not regular certificate files are refused before reading', () => {
  const servers: Server[] = [];
  afterEach(async () => {
    await Promise.all(servers.splice(0).map((s) => new Promise((r) => s.close(r))));
  });

  // Replaces tls.crt inside the version `..data` points at: what a check of the top-level name
  // (a symlink) would never see.
  const inData = (dir: string) => join(dir, '..data', 'tls.crt');
  const listen = (path: string) =>
    new Promise<void>((resolve) => {
      const server = createServer();
      servers.push(server);
      server.listen(path, resolve);
    });

  it.each([
    ['a FIFO', 'fifo', /is a FIFO \(named pipe\), not a regular file/, async (p: string) => void execFileSync('mkfifo', [p])],
    ['a Unix socket', 'socket', /is a socket, not a regular file \(ENXIO\)/, (p: string) => listen(p)],
    ['a directory', 'directory', /is a directory, not a regular file/, async (p: string) => mkdirSync(p)],
    ['a symlink loop', 'symlink_loop', /is a symlink loop \(ELOOP\)/, async (p: string) => symlinkSync('tls.crt', p)],
    ['a device', 'device', /is a device, not a regular file/, async (p: string) => symlinkSync('/dev/zero', p)],
    [
      'a 200 MB file',
      'too_large',
      /holds 209715200 bytes, above the 2097152-byte bound/,
      async (p: string) => (writeFileSync(p, ''), truncateSync(p, 200 * 1024 * 1024)),
    ],
  ])(
    '%s in place of tls.crt: refused with its own reason, the last good pair kept; reload resumes once the file is good',
    async (_name, reason, message, make) => {
      const dir = folder();
      await writeAtomically(dir, secret(ca.cert, first));
      const watcher = watcherOn(dir);
      await watcher.start();

      rmSync(inData(dir));
      await make(inData(dir));
      const refused = nextEvent(watcher);
      void watcher.check();
      const { failure } = await refused;
      expect(failure?.reason).toBe(reason);
      expect(failure?.message).toContain(`cannot read ${join(dir, 'tls.crt')}: `);
      expect(failure?.message).toMatch(message);
      expect(watcher.current?.serialNumber).toBe(serial(first.cert));
      await watcher.check();
      expect(watcher.stats).toEqual({ loads: 1, reloads: 0, failures: 1 });

      await expectRecoveryWith(watcher, dir, second);
    },
  );

  it('a file exactly at the bound is read; one byte more is refused, and so is one that grows past it after fstat', async () => {
    const dir = folder();
    const exact = join(dir, 'exact');
    writeFileSync(exact, Buffer.alloc(MAX_MOUNTED_FILE_BYTES, 'a'));
    expect((await readMountedFile(exact)).length).toBe(MAX_MOUNTED_FILE_BYTES);
    writeFileSync(exact, Buffer.alloc(MAX_MOUNTED_FILE_BYTES + 1, 'a'));
    await expect(readMountedFile(exact)).rejects.toMatchObject({ reason: 'too_large' });
    // fstat says 0 bytes for /proc files, which hold more: the read itself stops at the bound.
    await expect(readMountedFile('/proc/self/maps', 16)).rejects.toMatchObject({
      reason: 'too_large',
      message: expect.stringMatching(/held more than the 16-byte bound of a certificate file when read \(fstat said 0 bytes\)/),
    });
  });

  it('maxFileBytes bounds every file, and must be a positive whole number', async () => {
    const dir = folder();
    await writeAtomically(dir, secret(ca.cert, first));
    const small = watcherOn(dir, { maxFileBytes: 100 });
    const failure = new Promise<ReloadFailure>((resolve) => small.onFailure(resolve));
    void small.start();
    expect(await failure).toMatchObject({ reason: 'too_large', message: expect.stringContaining(`cannot read ${join(dir, 'tls.crt')}: holds`) });
    expect(small.ready).toBe(false);
    expect(() => watcherOn(dir, { maxFileBytes: -1 })).toThrow('CertificateWatcher: maxFileBytes=-1 must be a positive whole number of bytes');
    expect(() => watcherOn(dir, { maxFileBytes: Infinity })).toThrow('maxFileBytes=Infinity');
  });

  it('different problems one after another are each reported; the same problem again is not', async () => {
    const { dir, watcher, failures } = await loadedWatcher();

    rmSync(inData(dir));
    await watcher.check();
    symlinkSync('tls.crt', inData(dir));
    await watcher.check();
    await watcher.check();
    rmSync(inData(dir));
    mkdirSync(inData(dir));
    await watcher.check();
    await watcher.check();
    // The same file missing again, after other problems, is a new report.
    rmSync(inData(dir), { recursive: true });
    await watcher.check();
    // Another file missing as well is another problem.
    rmSync(join(dir, '..data', 'tls.key'));
    await watcher.check();
    expect(failures.map((f) => f.reason)).toEqual(['not_found', 'symlink_loop', 'directory', 'not_found', 'not_found']);
    expect(failures[4]!.message).toContain(`(nor ${join(dir, 'tls.key')}: not_found)`);
    expect(watcher.stats.failures).toBe(5);
    expect(watcher.current?.serialNumber).toBe(serial(first.cert));
  });
});

describe('listeners that throw', () => {
  it('are reported; the other listeners still run, and the watcher goes on loading and refusing', async () => {
    const dir = folder();
    await writeAtomically(dir, secret(ca.cert, first));
    const errors: Error[] = [];
    const watcher = watcherOn(dir, { onError: (e) => errors.push(e) });
    const seen: string[] = [];
    watcher.onMaterial(() => {
      throw new Error('material listener broke');
    });
    watcher.onMaterial((m) => seen.push(m.serialNumber));
    watcher.onFailure(() => {
      throw new Error('failure listener broke');
    });
    watcher.onFailure((f) => seen.push(f.reason));

    expect((await watcher.start()).serialNumber).toBe(serial(first.cert));
    await writeAtomically(dir, { 'ca.crt': ca.cert, 'tls.crt': second.cert, 'tls.key': first.key });
    await watcher.check();
    await writeAtomically(dir, secret(ca.cert, second));
    await watcher.check();
    expect(seen).toEqual([serial(first.cert), 'key_mismatch', serial(second.cert)]);
    expect(watcher.current?.serialNumber).toBe(serial(second.cert));
    expect(errors.map((e) => e.message)).toEqual([
      `certificate watcher for ${dir}: listener failed: material listener broke`,
      `certificate watcher for ${dir}: listener failed: failure listener broke`,
      `certificate watcher for ${dir}: listener failed: material listener broke`,
    ]);
  });

  it('an error reporter that throws as well changes nothing', async () => {
    const dir = folder();
    await writeAtomically(dir, secret(ca.cert, first));
    const watcher = watcherOn(dir, {
      onError: () => {
        throw new Error('reporter broke');
      },
    });
    watcher.onMaterial(() => {
      throw new Error('listener broke');
    });
    expect((await watcher.start()).serialNumber).toBe(serial(first.cert));
    await writeAtomically(dir, secret(ca.cert, second));
    await watcher.check();
    expect(watcher.current?.serialNumber).toBe(serial(second.cert));
  });
});
