import { afterAll, describe, expect, it } from '@jest/globals';
import { existsSync, lstatSync, mkdirSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { badClientFolders } from '@eso-mtls/test-kit/bad-client-folders';
import { writeAtomically } from '@eso-mtls/test-kit/demo';
import { PageSession, STOP_MS, repoRoot } from './page-session.js';
import { runnableBlocks } from './runnable-blocks.js';

// docs/provider-developers.md's inner loop, followed as a newcomer would, with PageSession as
// docs/getting-started.md is: eso-mtls dev-certs rotating every 10 s in one terminal, the page's
// TypeScript provider (saved as provider.ts, run by Node) in another, the page's client called
// with connectTo before and after rotations, then the page's Go provider and Go client through
// rotations. A block that fails fails the test, naming it. Scale: one provider, about 1 minute warm
// (the Go builds take longer on a cold cache).

const page = 'docs/provider-developers.md';
const session = new PageSession(page, 'eso-mtls-provider-developers-');
let passed = false;
afterAll(() => session.close(passed), STOP_MS + 60_000);

describe(page, () => {
  it('runs from dev-certs to a TypeScript and a Go provider reloading rotated certificates, each called over mTLS, and stops on Ctrl-C', async () => {
    for (const built of ['packages/controller/dist/bin/eso-mtls.js', 'packages/devtools/dist/index.js', 'packages/grpc/dist/index.js']) {
      if (!existsSync(join(repoRoot, built))) throw new Error(`${built} is missing: run \`npm run build\` first (the page runs the built packages)`);
    }
    const blocks = runnableBlocks(readFileSync(join(repoRoot, page), 'utf8'));
    // The page's shape, so that a block lost in an edit fails here rather than passing unnoticed.
    expect(blocks.filter((b) => b.mode === 'file').map((b) => b.file)).toEqual(['.eso-mtls-dev/provider.ts', '.eso-mtls-dev/client.ts']);
    expect(blocks.filter((b) => b.mode === 'background').map((b) => b.script.split('\n').at(-1)!.split(' ').slice(0, 2).join(' '))).toEqual([
      'npx eso-mtls',
      'node .eso-mtls-dev/provider.ts',
      '.eso-mtls-dev/reloading-provider -cert-dir', // the pod's command: it serves until SIGTERM or Ctrl-C
    ]);
    expect(blocks.find((b) => b.file === '.eso-mtls-dev/client.ts')!.script).toContain("{ connectTo: '127.0.0.1:8443' }");
    // Node's type stripping checks nothing: both files are type-checked before they run.
    const typeChecks = blocks.filter((b) => b.mode === 'foreground' && b.script.includes('npx tsc --noEmit')).map((b) => b.script);
    for (const file of ['.eso-mtls-dev/provider.ts', '.eso-mtls-dev/client.ts']) expect(typeChecks.some((s) => s.includes(file))).toBe(true);
    expect(blocks.some((b) => b.mode === 'foreground' && b.script.includes('-connect-to 127.0.0.1:8445'))).toBe(true);

    await session.run(blocks);
    // Everything the page wrote is under .eso-mtls-dev/, which the clone ignores; the rest is the clone's own entries.
    expect(readdirSync(session.work).filter((e) => !lstatSync(join(session.work, e)).isSymbolicLink())).toEqual(['.eso-mtls-dev']);

    const [goProvider, tsProvider, devCerts] = await session.pressCtrlC();
    // Each provider reloaded a rotated certificate while it served.
    expect(tsProvider!.output).toMatch(/"reason":"reloaded"/);
    expect(goProvider!.output).toMatch(/"event":"reloaded"/);
    expect(devCerts!.output).toContain('eso-mtls dev-certs: SIGINT: stopping');
    expect(devCerts!.output).toMatch(/eso-mtls dev-certs: stopped; every folder in .*\.eso-mtls-dev\/certs is whole/);
    expect(devCerts!.output).not.toContain('PRIVATE KEY');
    passed = true;
  }, 1_800_000);
});

// The page's client run on each client folder a newcomer can get wrong (issue 33): it hung there,
// printing nothing. Now the watcher logs the refusal at once and the client gives up at the
// page's deadline (a few seconds), printing the reason. Checked by what it prints, never by time:
// a client that hangs is killed after two minutes and fails here.
const clientSession = new PageSession(page, 'eso-mtls-provider-client-');
let clientPassed = false;
afterAll(() => clientSession.close(clientPassed), STOP_MS);

describe(`${page}: the client on a bad client folder`, () => {
  it("names the reason and exits 1: another CA's ca.crt, a server certificate, an expired one, no folder", async () => {
    if (!existsSync(join(repoRoot, 'packages/grpc/dist/index.js'))) throw new Error('packages/grpc/dist is missing: run `npm run build` first');
    // The page's client file, wherever the page saves it.
    const client = runnableBlocks(readFileSync(join(repoRoot, page), 'utf8')).find((b) => /(^|\/)client\.ts$/.test(b.file ?? ''))!;
    // The folder the page's client reads, as the page names it.
    const folder = /directory: '([^']+)'/.exec(client.script)?.[1];
    if (folder === undefined) throw new Error(`${page}'s ${client.file!} names no directory: '...'`);
    const top = join(clientSession.work, folder.split('/')[0]!);
    // The session links the clone's entries: writing through one of them would write into the clone.
    if (existsSync(top) && lstatSync(top).isSymbolicLink()) throw new Error(`${folder} lies in the clone (${top} is a link); refusing to write there`);
    await clientSession.run([client]);
    const dir = join(clientSession.work, folder);
    for (const bad of await badClientFolders()) {
      rmSync(dir, { recursive: true, force: true });
      if (bad.files !== undefined) {
        mkdirSync(dir, { recursive: true });
        await writeAtomically(dir, bad.files);
      }
      const { code, output } = await clientSession.runAnyExit(`node ${client.file!}`, 120);
      expect({ folder: bad.name, code }).toEqual({ folder: bad.name, code: 1 });
      // At once, the watcher's line on stderr; then what the client printed when it gave up.
      expect(output).toContain(`"reason":"${bad.reason}"`);
      expect(output).toContain(`last refusal (${bad.reason}): ${folder}: `);
    }
    clientPassed = true;
  }, 900_000);
});

describe('runnableBlocks: file= blocks', () => {
  it('saves a block of any language marked file=NAME, and refuses a name outside the folder', () => {
    expect(runnableBlocks('```ts file=provider.ts\nconst a = 1;\n```', 7)).toEqual([
      { mode: 'file', script: 'const a = 1;', line: 1, timeoutSeconds: 7, file: 'provider.ts' },
    ]);
    expect(() => runnableBlocks('```ts file=../escape.ts\nx\n```')).toThrow('line 1: file=../escape.ts is not a plain file name');
    // One folder of the working folder, as .eso-mtls-dev/; never above it, never deeper.
    expect(runnableBlocks('```ts file=.eso-mtls-dev/client.ts\nx\n```')[0]!.file).toBe('.eso-mtls-dev/client.ts');
    for (const name of ['../x/escape.ts', './escape.ts', 'a/b/c.ts', '/etc/passwd', '.eso-mtls-dev/..'])
      expect(() => runnableBlocks(`\`\`\`ts file=${name}\nx\n\`\`\``)).toThrow(`file=${name} is not a plain file name`);
  });
});
