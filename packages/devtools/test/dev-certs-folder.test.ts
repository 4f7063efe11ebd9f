import { execFileSync } from 'node:child_process';
import { chmod, lchown, lstat, mkdir, mkdtemp, readFile, readdir, readlink, rename, rm, symlink, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join, relative } from 'node:path';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from '@jest/globals';
import { runDevCertsCommand } from '../src/cli/dev-certs.js';
import { UnsafeVolumeFolderError, writeAtomically } from '../src/demo/atomic-writer.js';
import { capture } from './support/cli-streams.js';

// The symlink attack on a folder dev-certs writes (issue 37): with real files, a second user
// (nobody, uid 65534: the tests run as root) and real links, each way a link could redirect a
// write is refused, and the victim folder the link points at gains nothing and loses nothing.
// Scale: one provider, each run --once (a second or two each).

const NOBODY = 65534;
const EVENT_BOUND_MS = 120_000;

async function devCerts(argv: readonly string[]): Promise<{ code: number; out: string; err: string }> {
  const c = capture();
  const code = await runDevCertsCommand(argv, c.streams);
  return { code, out: c.out(), err: c.err() };
}

/** Every entry under `dir`, links not followed: path, kind, and a file's content. */
async function tree(dir: string): Promise<string[]> {
  const lines: string[] = [];
  const walk = async (folder: string): Promise<void> => {
    for (const name of (await readdir(folder)).sort()) {
      const path = join(folder, name);
      const stats = await lstat(path);
      const rel = relative(dir, path);
      if (stats.isSymbolicLink()) lines.push(`${rel} -> ${await readlink(path)}`);
      else if (stats.isDirectory()) {
        lines.push(`${rel}/ ${stats.uid} ${(stats.mode & 0o7777).toString(8)}`);
        await walk(path);
      } else lines.push(`${rel} ${stats.isFile() ? await readFile(path, 'utf8') : 'special'}`);
    }
  };
  await walk(dir);
  return lines;
}

async function until(what: string, condition: () => boolean | Promise<boolean>): Promise<void> {
  const deadline = Date.now() + EVENT_BOUND_MS;
  while (!(await condition())) {
    if (Date.now() > deadline) throw new Error(`gave up waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

let base: string;
let victim: string;
let victimBefore: string[];
beforeAll(async () => {
  base = await mkdtemp(join(tmpdir(), 'eso-mtls-dev-certs-attack-'));
  // A folder someone else cares about, writable by root (dev-certs' user here), like /etc.
  victim = join(base, 'victim');
  await mkdir(victim);
  await writeFile(join(victim, 'passwd'), 'root:x:0:0\n');
  victimBefore = await tree(victim);
});
afterAll(() => rm(base, { recursive: true, force: true }));

/** Gives `paths` (links themselves, not their targets) to the second user; only root can. */
async function giveToNobody(...paths: string[]): Promise<void> {
  if (process.getuid?.() !== 0) throw new Error('this test gives folders to nobody (uid 65534) with chown: run it as root, as CI does');
  for (const path of paths) await lchown(path, NOBODY, NOBODY);
}

let count = 0;
/** A fresh path under the test's folder (root's, 0700). */
const fresh = (): string => join(base, `dir-${++count}`);

/** A folder an earlier `dev-certs --once` wrote: what an attack on a folder in use starts from. */
async function earlierRun(): Promise<string> {
  const dir = fresh();
  const run = await devCerts(['--dir', dir, '--provider', 'aws', '--once']);
  expect(run.err).toBe('');
  expect(run.code).toBe(0);
  return dir;
}

/** A run on `argv` (default: --dir `dir`) refuses, saying `message`; the victim and `dir` are as they were. */
async function expectRefused(dir: string, message: string, argv: readonly string[] = ['--dir', dir, '--provider', 'aws', '--once']): Promise<void> {
  const before = await tree(dir);
  const run = await devCerts(argv);
  expect(run.err).toBe(`eso-mtls dev-certs: ${message}\n`);
  expect(run.code).toBe(1);
  expect(run.out).toBe('');
  expect(await tree(victim)).toEqual(victimBefore);
  expect(await tree(dir)).toEqual(before);
}

describe('eso-mtls dev-certs: a --dir someone else could change', () => {
  it("refuses a folder owned by another user, holding the marker and ca -> victim (the issue's attack)", async () => {
    const dir = fresh();
    await mkdir(dir, { mode: 0o755 });
    await writeFile(join(dir, '.eso-mtls-dev-certs'), 'Written by eso-mtls dev-certs\n');
    await symlink(victim, join(dir, 'ca'));
    await giveToNobody(dir, join(dir, '.eso-mtls-dev-certs'), join(dir, 'ca'));
    await expectRefused(
      dir,
      `${dir} is owned by uid ${NOBODY}, not by you (uid 0): its owner could put links in it that make dev-certs write its files elsewhere; give --dir a folder of your own (a new path is created for you)`,
    );
  });

  it.each([
    ['its group and others', '0777'],
    ['its group', '0775'],
    ['others', '0757'],
    ['its group and others', '01777'],
  ])('refuses a folder of ours writable by %s (mode %s), saying how to fix it', async (who, octal) => {
    const mode = parseInt(octal, 8);
    const dir = fresh();
    await mkdir(dir);
    await writeFile(join(dir, '.eso-mtls-dev-certs'), 'Written by eso-mtls dev-certs\n');
    await symlink(victim, join(dir, 'ca'));
    await chmod(dir, mode);
    await expectRefused(
      dir,
      `${dir} is writable by ${who} (mode ${octal}): they could put links in it that make dev-certs write its files elsewhere; run chmod go-w ${dir}, or give --dir a new folder`,
    );
  });

  it('refuses a new --dir under a folder another user owns, or one others can write without the sticky bit, and creates nothing', async () => {
    const theirs = fresh();
    await mkdir(theirs, { mode: 0o755 });
    await giveToNobody(theirs);
    await expectRefused(
      theirs,
      `${theirs}, a folder above ${join(theirs, 'dev')}, is owned by uid ${NOBODY}, not by you (uid 0) or root: its owner could swap ${join(theirs, 'dev')} for a link; give --dir a path under a folder of your own`,
      ['--dir', join(theirs, 'dev'), '--once'],
    );
    const open = fresh();
    await mkdir(open);
    await chmod(open, 0o777);
    await expectRefused(
      open,
      `${open}, a folder above ${join(open, 'dev')}, is writable by its group and others (mode 0777) without the sticky bit: they could swap ${join(open, 'dev')} for a link; run chmod go-w ${open} (or chmod +t), or give --dir a path under a folder of your own`,
      ['--dir', join(open, 'dev'), '--once'],
    );
    // /tmp itself is writable by all, with the sticky bit: a folder under it is fine (every other test here).
  });

  it.each([
    [
      'a symlink to the victim',
      async (path: string) => symlink(victim, path),
      () => `is a symlink to ${victim}: dev-certs follows no link it did not make; give --dir the folder itself, or a new path`,
    ],
    [
      'a file',
      async (path: string) => writeFile(path, 'mine'),
      (path: string) => `is a file, not a folder; give --dir a new path (it is created), or move ${path} away`,
    ],
    [
      'a FIFO',
      async (path: string) => void execFileSync('mkfifo', [path]),
      (path: string) => `is a FIFO, not a folder; give --dir a new path (it is created), or move ${path} away`,
    ],
  ])('refuses a --dir that is %s, with no raw errno', async (_what, make, message) => {
    const parent = fresh();
    await mkdir(parent);
    const path = join(parent, 'dev');
    await make(path);
    await expectRefused(parent, `--dir ${path} ${message(path)}`, ['--dir', path, '--once']);
  });
});

describe('eso-mtls dev-certs: links in a folder of ours, from an earlier run', () => {
  it.each(['ca', 'eso-client', 'aws.provider-system'])('refuses %s swapped for a symlink to the victim', async (name) => {
    const dir = await earlierRun();
    await rm(join(dir, name), { recursive: true });
    await symlink(victim, join(dir, name));
    await expectRefused(
      dir,
      `${join(dir, name)} is a symlink to ${victim}, not a folder dev-certs made: dev-certs follows no link it did not make; remove it, or give --dir a new folder`,
    );
  });

  it('refuses a folder of ours holding only the marker and ca -> victim, and creates none of the other folders', async () => {
    const dir = fresh();
    await mkdir(dir);
    await writeFile(join(dir, '.eso-mtls-dev-certs'), 'Written by eso-mtls dev-certs\n');
    await symlink(victim, join(dir, 'ca'));
    await expectRefused(
      dir,
      `${join(dir, 'ca')} is a symlink to ${victim}, not a folder dev-certs made: dev-certs follows no link it did not make; remove it, or give --dir a new folder`,
    );
  });

  const linkAt = (path: string, target: string): Promise<void> => rm(path, { recursive: true, force: true }).then(() => symlink(target, path));
  it.each([
    ['eso-client/..data -> the victim', 'eso-client', async (folder: string) => linkAt(join(folder, '..data'), victim), '..data'],
    ['eso-client/..data -> ../../victim', 'eso-client', async (folder: string) => linkAt(join(folder, '..data'), '../../victim'), '..data'],
    [
      'the timestamped folder ..data points at -> the victim',
      'aws.provider-system',
      async (folder: string) => linkAt(join(folder, await readlink(join(folder, '..data'))), victim),
      'version',
    ],
    ['eso-client/tls.key -> victim/tls.key', 'eso-client', async (folder: string) => linkAt(join(folder, 'tls.key'), join(victim, 'tls.key')), 'tls.key'],
    ['ca/ca.crt -> victim/passwd', 'ca', async (folder: string) => linkAt(join(folder, 'ca.crt'), join(victim, 'passwd')), 'ca.crt'],
  ])('refuses %s', async (_what, name, plant, entry) => {
    const dir = await earlierRun();
    const folder = join(dir, name);
    const version = await readlink(join(folder, '..data'));
    await plant(folder);
    const path = entry === 'version' ? join(folder, version) : join(folder, entry);
    const expected =
      entry === '..data' || entry === 'version'
        ? entry === '..data'
          ? 'the link to a timestamped folder beside it'
          : 'a timestamped folder'
        : `the link ..data/${entry}`;
    await expectRefused(
      dir,
      `${path} is a symlink to ${await readlink(path)}, not ${expected}; it was not made by this writer and is not followed: remove it, or give --dir a new folder`,
    );
  });

  it('refuses a folder of ours owned by another user inside --dir', async () => {
    const dir = await earlierRun();
    await giveToNobody(join(dir, 'eso-client'));
    await expectRefused(
      dir,
      `${join(dir, 'eso-client')} is owned by uid ${NOBODY}, not by you (uid 0): its owner could put links in it that make dev-certs write its files elsewhere; give --dir a folder of your own (a new path is created for you)`,
    );
  });

  it('takes an earlier run of ours, nobody else able to write it, as before', async () => {
    const dir = await earlierRun();
    const before = await readFile(join(dir, 'eso-client', 'tls.crt'), 'utf8');
    const again = await devCerts(['--dir', dir, '--provider', 'aws', '--once']);
    expect(again.err).toBe('');
    expect(again.code).toBe(0);
    expect(await readFile(join(dir, 'eso-client', 'tls.crt'), 'utf8')).not.toBe(before);
    expect((await readdir(dir)).sort()).toEqual(['.eso-mtls-dev-certs', 'aws.provider-system', 'ca', 'eso-client']);
  });
});

describe('eso-mtls dev-certs: a folder swapped for a link after the check, while it runs', () => {
  it('refuses each later write into it (logged), and the victim stays as it was', async () => {
    const dir = fresh();
    const c = capture();
    const stop = new AbortController();
    const run = runDevCertsCommand(['--dir', dir, '--provider', 'aws', '--rotate-every', '5s'], c.streams, stop.signal);
    try {
      await until('the ready line', () => c.out().includes('Press Ctrl-C to stop.') || c.err() !== '');
      expect(c.err()).toBe('');
      // Same user (only it can write --dir now): the eso-client folder becomes a link to the victim.
      await rename(join(dir, 'eso-client'), join(dir, 'eso-client.old'));
      await symlink(victim, join(dir, 'eso-client'));
      await until('a refused write', () => c.out().includes(`${join(dir, 'eso-client')} is a symlink to ${victim}`));
      expect(c.out()).toContain(
        `write failed, the next change retries: writing ${join(dir, 'eso-client')} (update) failed: ${join(dir, 'eso-client')} is a symlink to ${victim}, not a folder; it was not made by this writer and is not followed: remove it`,
      );
      // The provider's folder, not swapped, goes on rotating.
      const leaf = await readFile(join(dir, 'aws.provider-system', 'tls.crt'), 'utf8');
      await until('the provider folder rotated', async () => (await readFile(join(dir, 'aws.provider-system', 'tls.crt'), 'utf8')) !== leaf);
      expect(await tree(victim)).toEqual(victimBefore);
    } finally {
      stop.abort();
      expect(await run).toBe(0);
    }
    expect(await tree(victim)).toEqual(victimBefore);
  }, 300_000);
});

describe("the atomic writer on its own: a link it did not make is never followed (dev-certs' second line of defence)", () => {
  let folder: string;
  beforeEach(async () => {
    folder = fresh();
    await mkdir(folder);
    await writeAtomically(folder, { 'tls.crt': 'crt 1', 'tls.key': 'key 1' });
  });

  it.each([
    ['the folder itself a link', async () => linkFolder()],
    ['..data -> ../victim', async () => relink(join(folder, '..data'), relative(folder, victim))],
    ['..data -> the victim', async () => relink(join(folder, '..data'), victim)],
    ['the version ..data points at a link', async () => relink(join(folder, await readlink(join(folder, '..data'))), victim)],
    ['tls.key -> victim/tls.key', async () => relink(join(folder, 'tls.key'), join(victim, 'tls.key'))],
    ['a new name, passwd, -> victim/passwd', async () => symlink(join(victim, 'passwd'), join(folder, 'passwd'))],
    ['..data_tmp a folder', async () => mkdir(join(folder, '..data_tmp'))],
  ])('refuses %s before writing anything', async (_what, plant) => {
    const target = (await plant()) ?? folder;
    const before = await tree(base);
    await expect(writeAtomically(target, { 'tls.crt': 'crt 2', 'tls.key': 'key 2', passwd: 'owned' })).rejects.toThrow(UnsafeVolumeFolderError);
    expect(await tree(base)).toEqual(before);
    expect(await tree(victim)).toEqual(victimBefore);
  });

  async function relink(path: string, target: string): Promise<undefined> {
    await rm(path, { recursive: true, force: true });
    await symlink(target, path);
    return undefined;
  }
  async function linkFolder(): Promise<string> {
    const link = `${folder}-link`;
    await symlink(victim, link);
    return link;
  }
});
