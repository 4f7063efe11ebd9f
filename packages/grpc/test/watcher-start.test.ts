// ESO's client must not wait in silence on a bad client folder (issue 33): each refusal is logged
// by default, and start({ signal }) gives up with the last refusal's reason and message. Without a
// signal, start() still waits, since a Secret may be mounted before it is issued. Real folders
// written the kubelet's way, real certificates; no timing: signals are aborted by the test.
import { afterEach, beforeAll, describe, expect, it, jest } from '@jest/globals';
import { mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { CertificateWatcher, NoGoodCertificateError, reloadingCertificateSource, type ProviderLogRecord, type TlsMaterial } from '@eso-mtls/grpc';
import { badClientFolders, type BadClientFolder } from '@eso-mtls/test-kit/bad-client-folders';
import { writeAtomically } from '@eso-mtls/test-kit/demo';
import { failureOf } from '@eso-mtls/test-kit/failure';
import { issueTestCa, issueTestClient, issueTestServer, type TestCa } from '@eso-mtls/test-kit/pki';

let ca: TestCa;
let bad: BadClientFolder[];
const dirs: string[] = [];
const watchers: CertificateWatcher[] = [];

const good = async () => {
  const leaf = await issueTestClient(ca);
  return { 'ca.crt': ca.cert, 'tls.crt': leaf.cert, 'tls.key': leaf.key };
};

/** A fresh folder holding `files` (kubelet-style); with `files` undefined, a path where no folder is. */
async function clientFolder(files: Readonly<Record<string, string>> | undefined): Promise<string> {
  const parent = mkdtempSync(join(tmpdir(), 'watcher-start-'));
  dirs.push(parent);
  const dir = join(parent, 'eso-client');
  if (files !== undefined) {
    mkdirSync(dir);
    await writeAtomically(dir, files);
  }
  return dir;
}

function clientWatcher(dir: string, options: Partial<ConstructorParameters<typeof CertificateWatcher>[0]> = {}): CertificateWatcher {
  // An hour-long poll: a test re-reads with check() when it means to.
  const w = new CertificateWatcher({ directory: dir, purpose: 'clientAuth', pollIntervalMs: 3_600_000, log: false, ...options });
  watchers.push(w);
  return w;
}

/** Settles true once `promise` settles; false while it has not. */
function settledFlag(promise: Promise<unknown>): () => boolean {
  let settled = false;
  promise.then(
    () => (settled = true),
    () => (settled = true),
  );
  return () => settled;
}

/** The watcher lines the default logger writes to stderr; whatever else writes there (jest) passes through. */
function captureWatcherLines(): () => ProviderLogRecord[] {
  const written: string[] = [];
  const original = process.stderr.write.bind(process.stderr);
  jest.spyOn(process.stderr, 'write').mockImplementation(((chunk: string | Uint8Array, ...rest: never[]) => {
    const text = String(chunk);
    if (!text.includes('"component":"eso-mtls-certificate-watcher"')) return original(chunk, ...rest);
    written.push(text);
    return true;
  }) as typeof process.stderr.write);
  return () => written.flatMap((w) => w.split('\n').filter((l) => l !== '')).map((l) => JSON.parse(l) as ProviderLogRecord);
}

beforeAll(async () => {
  ca = await issueTestCa();
  bad = await badClientFolders();
});
afterEach(() => {
  jest.restoreAllMocks();
  watchers.splice(0).forEach((w) => w.close());
  dirs.splice(0).forEach((d) => rmSync(d, { recursive: true, force: true }));
});

describe('start({ signal }) gives up on a bad client folder with the last refusal', () => {
  it.each(['untrusted', 'wrong_purpose', 'expired', 'not_found'])('%s', async (reason) => {
    const folder = bad.find((b) => b.reason === reason)!;
    const dir = await clientFolder(folder.files);
    const watcher = clientWatcher(dir);
    const controller = new AbortController();
    // Given up as soon as the first refusal is known, as a deadline would later: no waiting here.
    watcher.onFailure(() => controller.abort(new DOMException('The operation was aborted due to timeout', 'TimeoutError')));
    const error = await failureOf<NoGoodCertificateError>(watcher.start({ signal: controller.signal }));
    expect(error).toBeInstanceOf(NoGoodCertificateError);
    expect(error).toMatchObject({ name: 'NoGoodCertificateError', reason, directory: dir });
    expect(error.message).toContain(`no good certificate in ${dir} when start() gave up (its signal timed out); last refusal (${reason}): ${dir}: `);
    expect(watcher.ready).toBe(false);
  });

  it('names the extendedKeyUsage a wrong certificate has by name, not by OID', async () => {
    const dir = await clientFolder(bad.find((b) => b.reason === 'wrong_purpose')!.files);
    const watcher = clientWatcher(dir);
    const controller = new AbortController();
    watcher.onFailure(() => controller.abort());
    const error = await failureOf<NoGoodCertificateError>(watcher.start({ signal: controller.signal }));
    expect(error.message).toContain('lacks extendedKeyUsage clientAuth; it has [serverAuth]');
    expect(error.message).toContain('(its signal was aborted)');
    expect(error.message).not.toContain('1.3.6.1.5.5.7.3');
  });

  it('a signal aborted before anything was refused says so', async () => {
    const watcher = clientWatcher(await clientFolder(await good()));
    const error = await failureOf<NoGoodCertificateError>(watcher.start({ signal: AbortSignal.abort(new Error('shutting down')) }));
    expect(error.reason).toBeUndefined();
    expect(error.message).toMatch(
      /when start\(\) gave up \(its signal was aborted: shutting down\); nothing was refused yet: the first read of the folder had not finished$/,
    );
    // The watcher carries on: a later start() without a signal gets the material.
    expect((await watcher.start()).leaf.subject).toContain('external-secrets-core');
  });

  it('resolves with the material when the folder is good before the signal aborts', async () => {
    const files = await good();
    const watcher = clientWatcher(await clientFolder(files));
    const controller = new AbortController();
    const material: TlsMaterial = await watcher.start({ signal: controller.signal });
    controller.abort();
    expect(material.certificate).toBe(files['tls.crt']);
    // Already loaded: even an aborted signal gets the material.
    await expect(watcher.start({ signal: AbortSignal.abort() })).resolves.toBe(material);
  });
});

describe('without a signal, start() waits for a good folder', () => {
  it('stays pending through refusals and resolves once the folder is good', async () => {
    const dir = await clientFolder(undefined);
    const watcher = clientWatcher(dir);
    const refused = new Promise((resolve) => watcher.onFailure(resolve));
    const started = watcher.start();
    const settled = settledFlag(started);
    await refused;
    await watcher.check(); // the same problem again: still waiting
    expect(settled()).toBe(false);
    mkdirSync(dir);
    await writeAtomically(dir, await good());
    await watcher.check();
    expect((await started).leaf.subject).toContain('external-secrets-core');
  });
});

describe('refusals are logged by default', () => {
  it('one JSON line per problem on stderr, naming the reason and the folder; log: false silences it', async () => {
    const lines = captureWatcherLines();
    const dir = await clientFolder(undefined);
    const watcher = clientWatcher(dir, { log: undefined });
    const refused = new Promise((resolve) => watcher.onFailure(resolve));
    void watcher.start();
    await refused;
    await watcher.check(); // re-reading the same missing folder is not a new problem
    expect(lines()).toEqual([
      expect.objectContaining({
        level: 'warn',
        component: 'eso-mtls-certificate-watcher',
        message: 'certificate load refused; waiting for a good certificate',
        reason: 'not_found',
        detail: expect.stringContaining(`cannot read ${join(dir, 'tls.crt')}`),
      }),
    ]);

    // Loaded, then a server certificate written over it: refused, the last good one kept.
    mkdirSync(dir);
    const files = await good();
    await writeAtomically(dir, files);
    await watcher.check();
    const material = await watcher.start();
    const server = await issueTestServer(ca);
    await writeAtomically(dir, { ...files, 'tls.crt': server.cert, 'tls.key': server.key });
    await watcher.check();
    expect(lines()).toHaveLength(2);
    expect(lines()[1]).toMatchObject({
      message: 'certificate reload refused; keeping the last good certificate',
      reason: 'wrong_purpose',
      serialNumber: material.serialNumber,
      notAfter: new Date(material.notAfter).toISOString(),
    });
    expect(JSON.stringify(lines())).not.toMatch(/BEGIN|PRIVATE KEY/);

    const quiet = clientWatcher(await clientFolder(undefined), { log: false });
    const quietRefused = new Promise((resolve) => quiet.onFailure(resolve));
    void quiet.start();
    await quietRefused;
    expect(lines()).toHaveLength(2);
  });

  it("a logger of your own gets the records; the provider server's watcher leaves logging to the server", async () => {
    const lines = captureWatcherLines();
    const records: ProviderLogRecord[] = [];
    const watcher = clientWatcher(await clientFolder(undefined), { log: (r) => records.push(r) });
    const refused = new Promise((resolve) => watcher.onFailure(resolve));
    void watcher.start();
    await refused;
    expect(records).toEqual([expect.objectContaining({ reason: 'not_found', component: 'eso-mtls-certificate-watcher' })]);

    // startProviderServer logs its folder's refusals with its metrics identity; a second line would repeat them.
    const source = reloadingCertificateSource(await clientFolder(undefined));
    const serverRefused = new Promise((resolve) => source.watcher.onFailure(resolve));
    void source.start().catch(() => undefined);
    await serverRefused;
    source.close();
    expect(lines()).toEqual([]);
  });
});
