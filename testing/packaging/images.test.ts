import { describe, expect, it } from '@jest/globals';
import { spawnSync } from 'node:child_process';
import { chmodSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { delimiter, join, resolve } from 'node:path';

// The images' Node is a line we claim and test: package.json "engines", the Node matrix
// (scripts/node-releases.json, run by `npm run test:node-matrix`) and the Dockerfiles' base images
// must agree. No container engine runs here, so the Dockerfiles are read, not built; the manifest
// side (entrypoint, user) is checked in packages/controller/test/manifests.test.ts.
const root = resolve(import.meta.dirname, '../..');
const read = (path: string) => readFileSync(join(root, path), 'utf8');
const manifest = (path: string) => JSON.parse(read(path)) as { version: string; license: string; engines: { node: string }; workspaces?: string[] };

const rootManifest = manifest('package.json');
const nodeReleases = JSON.parse(read('scripts/node-releases.json')) as { main: string; releases: Record<string, string> };
const IMAGES = ['controller', 'file-provider'] as const;
const dockerfile = (name: string) => read(`deploy/docker/${name}.Dockerfile`);

/** The majors a range of the form `^22.12.0 || ^24.0.0` claims. */
function claimedMajors(range: string): number[] {
  return range.split('||').map((part) => {
    const m = /^\s*\^(\d+)\.\d+\.\d+\s*$/.exec(part);
    if (!m) throw new Error(`engines.node part '${part.trim()}' of '${range}' is not a caret range: name each claimed line as ^MAJOR.MINOR.PATCH`);
    return Number(m[1]);
  });
}

/** Every FROM of a Dockerfile: image reference (without digest), digest if pinned, and its Node major. */
function baseImages(text: string) {
  return [...text.matchAll(/^FROM\s+(\S+)/gm)].map((m) => {
    const [image, digest] = m[1]!.split('@') as [string, string | undefined];
    // node:24-trixie-slim (Docker Hub) or gcr.io/distroless/nodejs24-debian13:nonroot
    const major = /(?:^|\/)node:(\d+)\b/.exec(image)?.[1] ?? /\/nodejs(\d+)-/.exec(image)?.[1];
    return { image, digest, major: major === undefined ? undefined : Number(major) };
  });
}

/** The LABEL keys and values of a Dockerfile's final stage (the image that ships). */
function finalStageLabels(text: string): Map<string, string> {
  const finalStage = text.slice(text.lastIndexOf('\nFROM '));
  const joined = finalStage.replace(/\\\n/g, ' ');
  const labels = new Map<string, string>();
  for (const line of joined.split('\n').filter((l) => l.startsWith('LABEL '))) {
    for (const m of line.matchAll(/([a-z0-9.-]+)="([^"]*)"/g)) labels.set(m[1]!, m[2]!);
  }
  return labels;
}

describe('the Node.js lines we claim', () => {
  const claimed = claimedMajors(rootManifest.engines.node);

  it('are exactly the lines the Node matrix runs, and the main line is one of them', () => {
    expect(Object.keys(nodeReleases.releases).map(Number).sort()).toEqual([...claimed].sort());
    for (const [major, version] of Object.entries(nodeReleases.releases)) expect(version.split('.')[0]).toBe(major);
    expect(claimed).toContain(Number(nodeReleases.main));
  });

  it('are claimed the same by every published package and by the example the file-provider image builds', () => {
    const workspaces = rootManifest.workspaces!.filter((w) => w.startsWith('packages/')).concat('examples/file-provider');
    for (const w of workspaces) expect([w, manifest(`${w}/package.json`).engines.node]).toEqual([w, rootManifest.engines.node]);
  });

  it('leave out Node 20, which reached end of life in April 2026', () => {
    expect(claimed).not.toContain(20);
    expect(claimed.every((m) => m % 2 === 0)).toBe(true); // LTS lines only
  });

  it.each(IMAGES)('include the Node of every base image of the %s image, which is the main line', (name) => {
    const bases = baseImages(dockerfile(name));
    expect(bases.length).toBeGreaterThanOrEqual(2); // a build stage and the runtime
    for (const base of bases) {
      expect([base.image, base.major]).toEqual([base.image, Number(nodeReleases.main)]);
      expect(claimed).toContain(base.major);
    }
  });
});

describe.each(IMAGES)('deploy/docker/%s.Dockerfile', (name) => {
  const text = dockerfile(name);

  it('pins each base image by tag, and by digest only in the form scripts/resolve-image-digests.sh writes', () => {
    for (const { image, digest } of baseImages(text)) {
      expect(image).toMatch(/:[\w][\w.-]*$/);
      if (digest !== undefined) expect(digest).toMatch(/^sha256:[0-9a-f]{64}$/);
    }
  });

  it('labels the image with the standard OCI annotations', () => {
    const labels = finalStageLabels(text);
    for (const key of ['title', 'description', 'source', 'url', 'documentation', 'licenses', 'vendor', 'version', 'revision', 'created', 'base.name']) {
      expect([key, labels.has(`org.opencontainers.image.${key}`)]).toEqual([key, true]);
    }
    expect(labels.get('org.opencontainers.image.licenses')).toBe(rootManifest.license);
    // The build arguments scripts/images.sh passes, declared in the final stage so they are in scope.
    expect(labels.get('org.opencontainers.image.version')).toBe('${VERSION}');
    expect(labels.get('org.opencontainers.image.revision')).toBe('${REVISION}');
    expect(labels.get('org.opencontainers.image.created')).toBe('${CREATED}');
    const finalStage = text.slice(text.lastIndexOf('\nFROM '));
    for (const arg of ['VERSION', 'REVISION', 'CREATED']) expect(finalStage).toMatch(new RegExp(`^ARG ${arg}$`, 'm'));
    expect(labels.get('org.opencontainers.image.base.name')).toBe(baseImages(text).at(-1)!.image);
  });

  it('keeps in its build context (<Dockerfile>.dockerignore) everything it copies from there', () => {
    const ignore = read(`deploy/docker/${name}.Dockerfile.dockerignore`).split('\n');
    expect(ignore).toContain('*');
    const sources = [...text.matchAll(/^COPY\s+(?!--from)(.+)$/gm)].flatMap((m) => m[1]!.trim().split(/\s+/).slice(0, -1));
    expect(sources.length).toBeGreaterThan(0);
    for (const s of sources) expect([s, ignore.includes(`!${s}`)]).toEqual([s, true]);
  });
});

describe('npm run images (scripts/images.sh)', () => {
  // No container engine runs here: a stand-in builder on PATH shows which builder is chosen and
  // what it is asked to build; the Dockerfiles themselves are checked above.
  function runImages(builder: string, script: string, args: string[] = []) {
    const bin = mkdtempSync(join(tmpdir(), 'eso-mtls-images-'));
    try {
      const log = join(bin, 'calls.log');
      writeFileSync(join(bin, builder), `#!/bin/sh\necho "$*" >> '${log}'\n${script}\n`);
      chmodSync(join(bin, builder), 0o755);
      const run = spawnSync('bash', [join(root, 'scripts/images.sh'), ...args], {
        cwd: root,
        encoding: 'utf8',
        env: { ...process.env, PATH: `${bin}${delimiter}${process.env.PATH}`, ESO_MTLS_IMAGE_BUILDER: builder },
      });
      let calls: string[] = [];
      try {
        calls = readFileSync(log, 'utf8').trim().split('\n');
      } catch {
        // never called
      }
      return { status: run.status, stdout: run.stdout, stderr: run.stderr, calls };
    } finally {
      rmSync(bin, { recursive: true, force: true });
    }
  }

  it('says plainly that no builder works, and fails, when the one installed cannot reach its daemon', () => {
    const r = runImages('docker', 'exit 1');
    expect(r.status).toBe(3);
    expect(r.stderr).toContain('no container builder works here: docker installed but not usable');
    expect(r.stderr).toContain('no image was built');
    expect(r.calls).toEqual(['info']);
  });

  it('builds both images with the version, revision and creation time as build arguments', () => {
    const r = runImages('podman', 'exit 0', ['--push']);
    expect({ status: r.status, stderr: r.stderr }).toEqual({ status: 0, stderr: expect.any(String) }); // stderr shows on failure
    const version = manifest('packages/controller/package.json').version;
    expect(r.stdout.trim().split('\n')).toEqual([`eso-mtls/controller:${version}`, `eso-mtls/file-provider:${version}`]);
    const builds = r.calls.filter((c) => c.startsWith('build '));
    expect(builds).toHaveLength(2);
    for (const [i, name] of IMAGES.entries()) {
      const call = builds[i]!;
      expect(call).toContain(`-f deploy/docker/${name}.Dockerfile -t eso-mtls/${name}:${version}`);
      expect(call).toContain(`--build-arg VERSION=${version}`);
      expect(call).toMatch(/--build-arg REVISION=\S+ --build-arg CREATED=\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ/);
      expect(call).toContain(`--ignorefile deploy/docker/${name}.Dockerfile.dockerignore`);
      expect(call.endsWith(' .')).toBe(true);
    }
    expect(r.calls.filter((c) => c.startsWith('push '))).toEqual(IMAGES.map((n) => `push eso-mtls/${n}:${version}`));
  });
});
