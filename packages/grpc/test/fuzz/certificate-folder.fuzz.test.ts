// Fuzzes the provider's certificate-folder loader (CertificateWatcher over readMountedFile) with
// arbitrary folders: file contents (pool PEMs, mutated PEMs, random bytes), kubelet `..data`
// layouts and broken ones, symlinks (dangling, loops, outside the folder, to devices and sockets),
// FIFOs, directories, files beyond the size bound (1 TiB sparse files, which would exhaust memory
// if they were read), and read errors: root reads every file whatever its mode, and the loader
// takes no injected fs, so a failing read is /proc/self/mem (EIO at offset 0). Each run swaps
// several such folders in turn under a running watcher. A second property races the kubelet's own
// writes (the AtomicWriter test double) against reads of the watcher.
//
// Properties: every refusal is counted with a reason of TlsMaterialProblem (the one the folder
// predicts when a file cannot be read), the last good pair stays served, a pair is accepted only
// when its leaf verifies against a CA of its own ca.crt and matches its key, a valid pair is always
// accepted, nothing reaches onError, and no read hangs.
// Memory bound: at most maxFileBytes + 1 bytes are read per file (8 KiB here), so a run holds a few
// tens of KiB of file content whatever the folder holds.
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { execFileSync } from 'node:child_process';
import { X509Certificate, createPrivateKey } from 'node:crypto';
import { mkdirSync, mkdtempSync, openSync, closeSync, ftruncateSync, renameSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import fc from 'fast-check';
import { CertificateWatcher, type ReloadFailure, type TlsMaterial, type TlsMaterialProblem } from '@eso-mtls/grpc';
import { fuzzParameters } from '../../../../testing/fuzz/runs.js';
import { writeAtomically } from '@eso-mtls/test-kit/demo';
import { issueTestCa, issueTestClient, issueTestServer, type KeyPair, type TestCa } from '@eso-mtls/test-kit/pki';

const MAX_FILE_BYTES = 8192;
const NAMES = ['tls.crt', 'tls.key', 'ca.crt'] as const;
type Slot = 0 | 1 | 2;

/** Every reason a refusal may carry: TlsMaterialProblem, spelled out so a new reason fails here. */
const CLASSIFIED: readonly TlsMaterialProblem[] = [
  'not_found',
  'symlink_loop',
  'fifo',
  'socket',
  'directory',
  'device',
  'too_large',
  'unreadable',
  'empty',
  'missing_certificate',
  'missing_key',
  'garbage_pem',
  'key_mismatch',
  'not_a_ca',
  'missing_ca_bundle',
  'untrusted',
  'wrong_purpose',
  'not_yet_valid',
  'expired',
  // A chain in tls.crt refused by the core's verifyChain (a leaf followed by an unrelated CA is missing_issuer).
  'malformed',
  'out_of_order',
  'missing_issuer',
  'bad_signature',
  'critical_extension',
  'not_ca',
  'key_usage',
  'path_length',
  'name_constraints',
];

let ca: TestCa;
let otherCa: TestCa;
let leafA: KeyPair;
let leafB: KeyPair;
let foreignLeaf: KeyPair;
let clientLeaf: KeyPair;
let root: string;
let socketPath: string;
let socketServer: Server;

beforeAll(async () => {
  ca = await issueTestCa();
  otherCa = await issueTestCa();
  leafA = await issueTestServer(ca);
  leafB = await issueTestServer(ca);
  foreignLeaf = await issueTestServer(otherCa);
  clientLeaf = await issueTestClient(ca);
  root = mkdtempSync(join(tmpdir(), 'fuzz-cert-folder-'));
  socketPath = join(root, 'socket');
  socketServer = createServer();
  await new Promise<void>((resolve) => socketServer.listen(socketPath, resolve));
});

afterAll(async () => {
  await new Promise((resolve) => socketServer?.close(resolve));
  if (root) rmSync(root, { recursive: true, force: true });
});

// The pool: what each slot may hold, by index, so the model knows which combinations are valid.
const certificates = () => [leafA.cert, leafB.cert, foreignLeaf.cert, clientLeaf.cert, leafA.cert + ca.cert, leafB.cert + otherCa.cert];
const keys = () => [leafA.key, leafB.key, foreignLeaf.key, clientLeaf.key];
const bundles = () => [ca.cert, otherCa.cert, ca.cert + otherCa.cert, otherCa.cert + ca.cert, leafA.cert];
const poolOf = (slot: Slot): string[] => (slot === 0 ? certificates() : slot === 1 ? keys() : bundles());

/** What one of the three names holds. */
type Entry =
  | { kind: 'pool'; index: number } // a PEM of the slot's pool
  | { kind: 'bytes'; bytes: Uint8Array } // random bytes
  | { kind: 'mutated'; index: number; flips: [number, number][]; cut: number } // a pool PEM with bytes changed and cut
  | { kind: 'pemShaped'; label: string; body: Uint8Array } // a PEM block of random DER
  | { kind: 'padded'; index: number } // a pool PEM padded with newlines past the bound
  | { kind: 'outside'; index: number } // a symlink to a pool PEM outside the folder
  | { kind: 'procFile' } // a symlink to /proc/self/status: fstat says 0 bytes, the read returns text
  | { kind: 'missing' | 'directory' | 'fifo' | 'socket' | 'device' | 'dangling' | 'loop' | 'self' | 'sparseHuge' | 'ioError' };

const entry: fc.Arbitrary<Entry> = fc.oneof(
  { arbitrary: fc.record({ kind: fc.constant('pool' as const), index: fc.nat(5) }), weight: 8 },
  { arbitrary: fc.record({ kind: fc.constant('bytes' as const), bytes: fc.uint8Array({ maxLength: 2048 }) }), weight: 2 },
  {
    arbitrary: fc.record({
      kind: fc.constant('mutated' as const),
      index: fc.nat(5),
      flips: fc.array(fc.tuple(fc.nat(4000), fc.nat(255)), { maxLength: 4 }),
      cut: fc.nat(4000),
    }),
    weight: 3,
  },
  {
    arbitrary: fc.record({
      kind: fc.constant('pemShaped' as const),
      label: fc.constantFrom('CERTIFICATE', 'PRIVATE KEY', 'EC PRIVATE KEY', 'RSA PRIVATE KEY'),
      body: fc.uint8Array({ maxLength: 600 }),
    }),
    weight: 1,
  },
  { arbitrary: fc.record({ kind: fc.constant('padded' as const), index: fc.nat(5) }), weight: 1 },
  { arbitrary: fc.record({ kind: fc.constant('outside' as const), index: fc.nat(5) }), weight: 1 },
  {
    arbitrary: fc.record({
      kind: fc.constantFrom(
        'missing',
        'directory',
        'fifo',
        'socket',
        'device',
        'dangling',
        'loop',
        'self',
        'sparseHuge',
        'ioError',
        'procFile',
      ) as fc.Arbitrary<'missing' | 'directory' | 'fifo' | 'socket' | 'device' | 'dangling' | 'loop' | 'self' | 'sparseHuge' | 'ioError' | 'procFile'>,
    }),
    weight: 3,
  },
);

/**
 * How the folder is laid out: flat files; the kubelet's `..data` symlink to a timestamped folder
 * (relative, as the kubelet writes it, or absolute) with top-level symlinks; a `..data` that is
 * dangling, a loop, or a regular file; or no folder at all: missing, a file, a symlink loop.
 */
type Mode = 'flat' | 'kubelet' | 'kubeletAbsolute' | 'dataDangling' | 'dataLoop' | 'dataFile' | 'folderMissing' | 'folderFile' | 'folderLoop';
const layout = fc.record({
  mode: fc.oneof(
    { arbitrary: fc.constantFrom<Mode>('flat', 'kubelet', 'kubelet', 'kubeletAbsolute', 'dataDangling', 'dataLoop', 'dataFile'), weight: 9 },
    { arbitrary: fc.constantFrom<Mode>('folderMissing', 'folderFile', 'folderLoop'), weight: 1 },
  ),
  entries: fc.tuple(entry, entry, entry),
});
type Layout = { mode: Mode; entries: [Entry, Entry, Entry] };

/** A valid pair now: the arbitrary favours it, so acceptance after refusals is exercised. */
const validLayout: fc.Arbitrary<Layout> = fc.record({
  mode: fc.constantFrom<Mode>('flat', 'kubelet', 'dataDangling', 'dataFile'),
  entries: fc.constantFrom<[Entry, Entry, Entry]>(
    [
      { kind: 'pool', index: 0 },
      { kind: 'pool', index: 0 },
      { kind: 'pool', index: 0 },
    ],
    [
      { kind: 'pool', index: 1 },
      { kind: 'pool', index: 1 },
      { kind: 'pool', index: 2 },
    ],
    [
      { kind: 'pool', index: 4 },
      { kind: 'outside', index: 0 },
      { kind: 'pool', index: 3 },
    ],
  ),
});

function contentOf(slot: Slot, e: Entry): Buffer | undefined {
  const pool = poolOf(slot);
  switch (e.kind) {
    case 'pool':
    case 'outside':
      return Buffer.from(pool[e.index % pool.length]!);
    case 'bytes':
      return Buffer.from(e.bytes);
    case 'pemShaped':
      return Buffer.from(`-----BEGIN ${e.label}-----\n${Buffer.from(e.body).toString('base64')}\n-----END ${e.label}-----\n`);
    case 'mutated': {
      const b = Buffer.from(pool[e.index % pool.length]!);
      for (const [at, value] of e.flips) b[at % b.length] = value;
      return b.subarray(0, e.cut % (b.length + 1));
    }
    case 'padded': {
      const pem = Buffer.from(pool[e.index % pool.length]!);
      return Buffer.concat([pem, Buffer.alloc(MAX_FILE_BYTES + 1 - pem.length, '\n')]);
    }
    default:
      return undefined;
  }
}

/** The reason a name is refused before its content is judged, or undefined when it is read. */
function readProblem(e: Entry): TlsMaterialProblem | undefined {
  const reasons: Partial<Record<Entry['kind'], TlsMaterialProblem>> = {
    missing: 'not_found',
    dangling: 'not_found',
    directory: 'directory',
    fifo: 'fifo',
    socket: 'socket',
    device: 'device',
    loop: 'symlink_loop',
    self: 'symlink_loop',
    sparseHuge: 'too_large',
    padded: 'too_large',
    ioError: 'unreadable',
  };
  return reasons[e.kind];
}

/** Creates `name` in `dir` as `e` says; `outside` is a folder outside the mounted one. */
function materialize(dir: string, outside: string, slot: Slot, e: Entry): void {
  const path = join(dir, NAMES[slot]);
  const content = contentOf(slot, e);
  switch (e.kind) {
    case 'missing':
      return;
    case 'directory':
      mkdirSync(path);
      return;
    case 'fifo':
      execFileSync('mkfifo', [path]);
      return;
    case 'socket':
      symlinkSync(socketPath, path);
      return;
    case 'device':
      symlinkSync('/dev/zero', path);
      return;
    case 'ioError':
      // Opens (as root), but reading from offset 0 of a process's memory fails with EIO.
      symlinkSync('/proc/self/mem', path);
      return;
    case 'procFile':
      symlinkSync('/proc/self/status', path);
      return;
    case 'dangling':
      symlinkSync(join(dir, 'nowhere', NAMES[slot]), path);
      return;
    case 'loop':
      symlinkSync(`${NAMES[slot]}.b`, path);
      symlinkSync(NAMES[slot], `${path}.b`);
      return;
    case 'self':
      symlinkSync(NAMES[slot], path);
      return;
    case 'sparseHuge': {
      const fd = openSync(path, 'w');
      ftruncateSync(fd, 2 ** 40);
      closeSync(fd);
      return;
    }
    case 'outside':
      writeFileSync(join(outside, NAMES[slot]), content!);
      symlinkSync(join(outside, NAMES[slot]), path);
      return;
    default:
      writeFileSync(path, content!);
  }
}

/** Builds `l` in a fresh folder under `base`; returns the folder. */
function build(base: string, step: number, l: Layout): string {
  const dir = join(base, `v${step}`);
  const outside = join(base, `outside${step}`);
  if (l.mode === 'folderMissing') return dir;
  if (l.mode === 'folderFile') {
    writeFileSync(dir, 'a file where the folder belongs');
    return dir;
  }
  if (l.mode === 'folderLoop') {
    symlinkSync(dir, dir);
    return dir;
  }
  mkdirSync(dir);
  mkdirSync(outside);
  const filesIn = (d: string) => l.entries.forEach((e, slot) => materialize(d, outside, slot as Slot, e));
  switch (l.mode) {
    case 'kubelet':
    case 'kubeletAbsolute': {
      const ts = '..2026_11_23_03_00_00.123';
      mkdirSync(join(dir, ts));
      filesIn(join(dir, ts));
      symlinkSync(l.mode === 'kubelet' ? ts : join(dir, ts), join(dir, '..data'));
      for (const name of NAMES) symlinkSync(join('..data', name), join(dir, name));
      break;
    }
    case 'dataDangling':
      symlinkSync('..2026_gone', join(dir, '..data'));
      filesIn(dir);
      break;
    case 'dataLoop':
      symlinkSync('..data', join(dir, '..data'));
      filesIn(dir);
      break;
    case 'dataFile':
      writeFileSync(join(dir, '..data'), 'not a link');
      filesIn(dir);
      break;
    default:
      filesIn(dir);
  }
  return dir;
}

/** What the watcher must conclude: the refusal reason when it is known before content is judged, else the pair's validity. */
type Expected = { kind: 'refused'; reason?: TlsMaterialProblem } | { kind: 'valid'; certificate: string } | { kind: 'judged' };

function expected(l: Layout): Expected {
  if (l.mode === 'dataLoop') return { kind: 'refused', reason: 'symlink_loop' };
  if (l.mode === 'folderMissing') return { kind: 'refused', reason: 'not_found' };
  if (l.mode === 'folderFile' || l.mode === 'folderLoop') return { kind: 'refused' };
  const first = l.entries.map(readProblem).find((r) => r !== undefined);
  if (first !== undefined) return { kind: 'refused', reason: first };
  const [c, k, b] = l.entries;
  const pooled = (slot: Slot, e: Entry) => (e.kind === 'pool' || e.kind === 'outside' ? e.index % poolOf(slot).length : undefined);
  const [ci, ki, bi] = [pooled(0, c), pooled(1, k), pooled(2, b)];
  if (ci === undefined || ki === undefined || bi === undefined) return { kind: 'judged' };
  // Valid: a CA1 server leaf (A, B, or A with the CA as intermediate), its own key, and a bundle holding CA1.
  const leafKey: Partial<Record<number, number>> = { 0: 0, 1: 1, 4: 0 };
  const bundleTrusts = [0, 2, 3].includes(bi);
  return leafKey[ci] === ki && bundleTrusts ? { kind: 'valid', certificate: certificates()[ci]! } : { kind: 'judged' };
}

/** True when `l` holds exactly the served texts, which the watcher does not judge again. */
function sameFiles(l: Layout, served: TlsMaterial | undefined): boolean {
  if (served === undefined || expected(l).kind === 'refused') return false;
  const texts = l.entries.map((e, slot) => contentOf(slot as Slot, e)?.toString('utf8'));
  return texts[0] === served.certificate && texts[1] === served.privateKey && texts[2] === served.caBundle;
}

/** Checks `m` without the loader's code: the leaf matches the key and verifies against a CA of ca.crt. */
function verifiesIndependently(m: TlsMaterial): boolean {
  const leaf = new X509Certificate(m.certificate);
  if (!leaf.checkPrivateKey(createPrivateKey(m.privateKey))) return false;
  const blocks = m.caBundle.match(/-----BEGIN CERTIFICATE-----[\s\S]*?-----END CERTIFICATE-----/g) ?? [];
  return blocks.some((pem) => {
    const issuer = new X509Certificate(pem);
    return issuer.ca && leaf.checkIssued(issuer) && leaf.verify(issuer.publicKey);
  });
}

/** Rejects if `p` takes longer than a minute: a hang, not slowness, on any machine. */
function withinAMinute<T>(p: Promise<T>, what: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const hang = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`${what} did not finish within a minute: a hang`)), 60_000);
  });
  return Promise.race([p, hang]).finally(() => clearTimeout(timer));
}

describe('the certificate-folder loader under arbitrary folders', () => {
  it('refuses with a classified reason, keeps the last good pair, accepts only pairs that verify', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.array(fc.oneof({ arbitrary: layout, weight: 4 }, { arbitrary: validLayout, weight: 1 }), { minLength: 1, maxLength: 5 }),
        async (steps) => {
          const base = mkdtempSync(join(root, 'run-'));
          const link = join(base, 'certs');
          const errors: Error[] = [];
          const failures: ReloadFailure[] = [];
          const watcher = new CertificateWatcher({
            directory: link,
            purpose: 'serverAuth',
            pollIntervalMs: 3_600_000,
            maxFileBytes: MAX_FILE_BYTES,
            onError: (e) => errors.push(e),
          });
          watcher.onFailure((f) => failures.push(f));
          try {
            let served: TlsMaterial | undefined;
            for (const [i, step] of steps.entries()) {
              // An atomic swap of the whole folder, so the watcher never sees it half built.
              symlinkSync(build(base, i, step), `${link}.next`);
              renameSync(`${link}.next`, link);
              await withinAMinute(watcher.check(), `reading layout ${JSON.stringify(step.mode)}`);
              const now = watcher.current;
              const want = expected(step);
              if (want.kind === 'valid') {
                expect(now?.certificate).toBe(want.certificate);
              } else if (now !== served) {
                // Accepted something the model cannot judge: it must verify on its own (below).
                expect(want.kind).toBe('judged');
              }
              if (now === served && !sameFiles(step, served)) {
                expect(CLASSIFIED).toContain(failures.at(-1)?.reason);
                if (want.kind === 'refused' && want.reason !== undefined) expect(failures.at(-1)?.reason).toBe(want.reason);
              }
              if (now !== undefined) expect(verifiesIndependently(now)).toBe(true);
              expect(watcher.ready).toBe(now !== undefined);
              served = now;
            }
            expect(errors).toEqual([]);
            expect(failures.every((f) => CLASSIFIED.includes(f.reason))).toBe(true);
          } finally {
            watcher.close();
            rmSync(base, { recursive: true, force: true });
          }
        },
      ),
      fuzzParameters(60),
    );
  });

  it('racing kubelet writes: whatever is served verifies, and a valid last write is what is served at the end', async () => {
    // A Secret's payload: pool PEMs by index, or a name left out.
    const payload = fc.tuple(fc.option(fc.nat(5), { freq: 8 }), fc.option(fc.nat(3), { freq: 8 }), fc.option(fc.nat(4), { freq: 8 }));
    await fc.assert(
      fc.asyncProperty(fc.array(fc.tuple(payload, fc.boolean()), { minLength: 1, maxLength: 6 }), async (writes) => {
        const dir = mkdtempSync(join(root, 'race-'));
        const errors: Error[] = [];
        const watcher = new CertificateWatcher({
          directory: dir,
          purpose: 'serverAuth',
          pollIntervalMs: 3_600_000,
          debounceMs: 0,
          onError: (e) => errors.push(e),
        });
        const written: string[] = [];
        try {
          const reads: Promise<void>[] = [];
          for (const [indices, readNow] of writes) {
            const files = Object.fromEntries(
              indices.flatMap((index, slot) => (index === null ? [] : [[NAMES[slot], poolOf(slot as Slot)[index % poolOf(slot as Slot).length]!]])),
            );
            const write = writeAtomically(dir, files);
            // A read started while the kubelet swaps ..data and removes the old folder.
            if (readNow) reads.push(watcher.check());
            await write;
            written.push(files['tls.crt'] ?? '');
            if (watcher.current !== undefined) expect(verifiesIndependently(watcher.current)).toBe(true);
          }
          await withinAMinute(Promise.all(reads), 'reads racing the kubelet');
          await withinAMinute(watcher.check(), 'the read after the last write');
          const last = writes.at(-1)![0];
          const lastValid = expected({
            mode: 'kubelet',
            entries: last.map((index) => (index === null ? { kind: 'missing' } : { kind: 'pool', index })) as [Entry, Entry, Entry],
          });
          if (lastValid.kind === 'valid') expect(watcher.current?.certificate).toBe(lastValid.certificate);
          if (watcher.current !== undefined) {
            expect(verifiesIndependently(watcher.current)).toBe(true);
            expect(written).toContain(watcher.current.certificate);
          }
          expect(errors).toEqual([]);
        } finally {
          watcher.close();
          rmSync(dir, { recursive: true, force: true });
        }
      }),
      fuzzParameters(20),
    );
  });
});
