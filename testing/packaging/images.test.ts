import { describe, expect, it } from '@jest/globals';
import { spawnSync } from 'node:child_process';
import { chmodSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { delimiter, join, resolve } from 'node:path';

// The images' Node is a line we claim and test: package.json "engines", the Node matrix
// (scripts/node-releases.json, run by `npm run test:node-matrix`) and the Dockerfiles' base images
// must agree. Here the Dockerfiles are read; built-images.test.ts builds them all (the HSM one too)
// on the stand-in bases and runs them; the manifest side (entrypoint, user) is checked in
// packages/controller/test/manifests.test.ts.
const root = resolve(import.meta.dirname, '../..');
const read = (path: string) => readFileSync(join(root, path), 'utf8');
const manifest = (path: string) => JSON.parse(read(path)) as { version: string; license: string; engines: { node: string }; workspaces?: string[] };

const rootManifest = manifest('package.json');
const nodeReleases = JSON.parse(read('scripts/node-releases.json')) as { main: string; releases: Record<string, string> };
/** The images `npm run images` builds. */
const IMAGES = ['controller', 'file-provider'] as const;
/** Every Dockerfile of deploy/docker: those images, and the HSM-capable controller one builds by hand (docs/hsm.md); the test suite builds all three. */
const DOCKERFILES = [...IMAGES, 'controller-hsm'] as const;
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

  it.each(DOCKERFILES)('include the Node of every base image of the %s image, which is the main line', (name) => {
    const bases = baseImages(dockerfile(name));
    expect(bases.length).toBeGreaterThanOrEqual(2); // a build stage and the runtime
    for (const base of bases) {
      expect([base.image, base.major]).toEqual([base.image, Number(nodeReleases.main)]);
      expect(claimed).toContain(base.major);
    }
  });
});

describe.each(DOCKERFILES)('deploy/docker/%s.Dockerfile', (name) => {
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

/** A Dockerfile's stages by name (the final one as `final`), each its text from its FROM to the next, continuation lines joined. */
function stages(text: string): Map<string, string> {
  const joined = text.replace(/\\\n\s*/g, ' ');
  const starts = [...joined.matchAll(/^FROM\s+\S+(?:\s+AS\s+(\S+))?\s*$/gm)];
  return new Map(starts.map((m, i) => [i === starts.length - 1 ? 'final' : m[1]!, joined.slice(m.index, starts[i + 1]?.index)]));
}

/** A stage's lines of one instruction, without the instruction (`RUN`, `COPY`, ...). */
const instructions = (stage: string, instruction: string) =>
  stage
    .split('\n')
    .filter((l) => l.startsWith(`${instruction} `))
    .map((l) => l.slice(instruction.length + 1).trim());

/** The commands of a stage's RUN instructions, each `&&` step apart. */
const runSteps = (stage: string) => instructions(stage, 'RUN').flatMap((r) => r.split('&&').map((step) => step.trim()));

describe('deploy/docker/controller-hsm.Dockerfile: the controller image with a PKCS#11 module (docs/hsm.md)', () => {
  const hsm = stages(dockerfile('controller-hsm'));
  const controller = stages(dockerfile('controller'));
  const binding = Object.keys((JSON.parse(read('packages/pkcs11/package.json')) as { optionalDependencies: Record<string, string> }).optionalDependencies);

  it('says at its top how to build it, with SoftHSM2 and with a vendor module', () => {
    const header = dockerfile('controller-hsm').split('\nFROM ')[0]!;
    expect(header).toContain('-f deploy/docker/controller-hsm.Dockerfile');
    expect(header).toContain('--build-context hsm-module=');
    expect(header).toContain('hsm.image.repository=');
  });

  it("runs as the controller image does: its runtime base, folder, copies, user and entrypoint, so the chart's args run it unchanged", () => {
    for (const instruction of ['WORKDIR', 'USER', 'ENTRYPOINT']) {
      expect([instruction, instructions(hsm.get('final')!, instruction)]).toEqual([instruction, instructions(controller.get('final')!, instruction)]);
    }
    expect(baseImages(dockerfile('controller-hsm')).at(-1)).toEqual(baseImages(dockerfile('controller')).at(-1));
    const fromBuild = (stage: string) => instructions(stage, 'COPY').filter((c) => c.startsWith('--from=build '));
    expect(fromBuild(hsm.get('final')!)).toEqual(fromBuild(controller.get('final')!));
  });

  it('builds what controller.Dockerfile builds, and compiles the binding of @eso-mtls/pkcs11 with a C++ toolchain, failing when it does not load', () => {
    expect(binding).toEqual(['pkcs11js']);
    const build = hsm.get('build')!;
    expect(instructions(build, 'COPY')).toEqual(instructions(controller.get('build')!, 'COPY'));
    const steps = runSteps(build);
    // The controller's steps, in their order, with the binding's around them.
    const theirs = runSteps(controller.get('build')!);
    expect(steps.filter((s) => theirs.includes(s))).toEqual(theirs);
    const at = (step: string) => steps.findIndex((s) => s.startsWith(step));
    expect(steps).toContain('apt-get install -y --no-install-recommends python3 make g++');
    expect(at(`npm rebuild ${binding[0]} `)).toBeGreaterThan(at('npm ci '));
    expect(at(`npm rebuild ${binding[0]} `)).toBeLessThan(at('npm prune '));
    expect(steps.at(-1)).toBe(`node -e "require('${binding[0]}')"`);
    expect(at('cd packages/pkcs11')).toBe(steps.length - 2); // resolved from the package that imports it
    expect(instructions(build, 'ENV')).toContain('npm_config_nodedir=/usr/local'); // this Node's headers, none downloaded
  });

  it('puts the module in /opt/hsm/ and the libraries it needs in /opt/hsm/lib/, on the library path, from a stage a --build-context replaces', () => {
    const steps = runSteps(hsm.get('hsm-module')!);
    expect(steps).toContain('apt-get install -y --no-install-recommends softhsm2');
    expect(steps.some((s) => /^cp .*libsofthsm2.* \/opt\/hsm\/$/.test(s))).toBe(true);
    expect(steps.at(-1)).toMatch(/\| xargs -r cp -L -t \/opt\/hsm\/lib\/$/);
    const final = hsm.get('final')!;
    expect(instructions(final, 'ARG')).toContain('HSM_MODULE_DIR=/opt/hsm');
    expect(instructions(final, 'COPY')).toContain('--from=hsm-module ${HSM_MODULE_DIR}/ /opt/hsm/');
    expect(instructions(final, 'ENV').join(' ')).toMatch(/(^|\s)LD_LIBRARY_PATH=\/opt\/hsm\/lib(\s|$)/);
    // The path the chart's values and docs/hsm.md give as the example module.
    for (const doc of ['deploy/helm/eso-mtls/values.yaml', 'docs/hsm.md']) expect([doc, read(doc).includes('/opt/hsm/libsofthsm2.so')]).toEqual([doc, true]);
  });
});

describe('npm run images (scripts/images.sh)', () => {
  // A stand-in builder on PATH shows which builder is chosen and what it is asked to build (and
  // forces a built image to carry the stand-in label); built-images.test.ts runs the real buildah.
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

  it('with --push, refuses to push an image it built that carries the stand-in label, and pushes nothing', () => {
    // The bases look real to the builder; the built controller image says it was built on a stand-in.
    const standInBuilt = `case "$*" in "image inspect "*eso-mtls/controller:*) echo "true gcr.io/distroless/nodejs24-debian13:nonroot" ;; esac; exit 0`;
    const r = runImages('podman', standInBuilt, ['--push']);
    expect(r.status).toBe(4);
    const version = manifest('packages/controller/package.json').version;
    expect(r.stderr).toContain(`refusing to push: the image eso-mtls/controller:${version} just built carries io.eso-mtls.stand-in=true`);
    expect(r.stderr).toContain('gcr.io/distroless/nodejs24-debian13:nonroot');
    expect(r.calls.filter((c) => c.startsWith('build ')).length).toBe(1);
    expect(r.calls.filter((c) => c.startsWith('push '))).toEqual([]);
  });
});

describe('the build stages of deploy/docker', () => {
  /** A Dockerfile's build stage up to and including its first RUN, comments left out: what a layer cache shares. */
  const sharedLines = (name: string) => {
    const lines = stages(dockerfile(name))
      .get('build')!
      .split('\n')
      .filter((l) => l.trim() !== '' && !l.startsWith('#'));
    return lines.slice(0, lines.findIndex((l) => l.startsWith('RUN ')) + 1);
  };
  /** An ignore file's lines about the paths those lines copy (the ones outside package.json, the lockfile, tsconfig.base.json and packages/ left out). */
  const sharedContext = (name: string) =>
    read(`deploy/docker/${name}.Dockerfile.dockerignore`)
      .split('\n')
      .filter((l) => l !== '' && !l.startsWith('#') && !/^!(examples|deploy)\//.test(l));

  it('begin with the same lines, through the install and build of the workspace, so that a layer cache does that once for all three images', () => {
    const controller = sharedLines('controller');
    expect(controller.at(-1)).toMatch(/^RUN npm ci .*&& npm run build --workspaces --if-present$/);
    for (const name of DOCKERFILES) expect([name, sharedLines(name)]).toEqual([name, controller]);
  });

  it("copy those lines' sources from the same files: the ignore files agree on everything outside examples/ and deploy/", () => {
    for (const name of DOCKERFILES) expect([name, sharedContext(name)]).toEqual([name, sharedContext('controller')]);
  });
});

describe('the developer tools stay out of the images', () => {
  /** What only @eso-mtls/devtools brings: the chart renderer, and the package itself with the demo and the cluster launcher. */
  const DEVELOPER_ONLY = ['vega', 'vega-lite', '@eso-mtls/devtools'];
  const kept = rootManifest.workspaces!.filter((w) => w.startsWith('packages/') && w !== 'packages/devtools');
  const dependencies = (w: string) => Object.keys((JSON.parse(read(`${w}/package.json`)) as { dependencies?: Record<string, string> }).dependencies ?? {});

  it('no package the images keep depends on what only the developer tools use; devtools does', () => {
    for (const w of kept) expect([w, dependencies(w).filter((d) => DEVELOPER_ONLY.includes(d))]).toEqual([w, []]);
    expect(dependencies('packages/devtools')).toEqual(expect.arrayContaining(['vega', 'vega-lite', '@eso-mtls/controller']));
  });

  it.each(DOCKERFILES)('%s.Dockerfile removes packages/devtools after the shared install and before the prune, which then drops vega and vega-lite', (name) => {
    const steps = runSteps(stages(dockerfile(name)).get('build')!);
    const at = (step: string) => steps.findIndex((s) => s.startsWith(step));
    expect(at('rm -rf packages/devtools')).toBeGreaterThan(at('npm run build --workspaces'));
    expect(at('rm -rf packages/devtools')).toBeLessThan(at('npm prune --omit=dev '));
    expect(steps.filter((s) => s === 'rm -rf packages/devtools')).toHaveLength(1);
  });
});
