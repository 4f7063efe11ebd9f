import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { execFileSync, spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { buildah, ensureImages, type ImageRole, type TestImages } from '../images/ensure.js';

// The images of deploy/docker (controller, controller-hsm, file-provider) and the real-node suite's
// own (eso-client, pause), really built with buildah by scripts/ensure-images.sh on the stand-in
// base images (docs/images.md), then run under runc (buildah run --isolation oci) with no network.
// Scale: five images, cached by their inputs; warm this takes a few seconds, cold (a fresh
// machine) the builds take minutes once, in scripts/prepare-test-env.sh before the suite.
const root = resolve(import.meta.dirname, '../..');
const version = (JSON.parse(readFileSync(join(root, 'packages/controller/package.json'), 'utf8')) as { version: string }).version;

let images: TestImages;
const containers: string[] = [];

beforeAll(() => {
  images = ensureImages();
}, 45 * 60_000);

afterAll(() => {
  for (const c of containers) buildah(images, ['rm', c]);
});

/** A label, the entrypoint or the user of a built image. */
function config(role: ImageRole) {
  const out = buildah(images, ['inspect', '--type', 'image', images.byRole[role].name]);
  expect(out.stderr).toBe('');
  return (JSON.parse(out.stdout) as { OCIv1: { config: { Labels?: Record<string, string>; Entrypoint?: string[]; User?: string } } }).OCIv1.config;
}

/**
 * Runs `command` (default: the image's entrypoint) with `args` in a container of the image, under
 * runc with an empty network namespace (--network none: only `lo`), as the image's user.
 */
function run(role: ImageRole, args: string[], command?: string[]) {
  const c = buildah(images, ['from', '--pull-never', images.byRole[role].name]);
  expect(c.stderr).toBe('');
  const container = c.stdout.trim();
  containers.push(container);
  const argv = [...(command ?? config(role).Entrypoint ?? []), ...args];
  return buildah(images, ['run', '--isolation', 'oci', '--network', 'none', container, '--', ...argv]);
}

describe('scripts/ensure-images.sh', () => {
  it('gives every image of the real-node suite as a docker-archive named as the manifest says', () => {
    expect(Object.keys(images.byRole).sort()).toEqual(['controller', 'controller-hsm', 'eso-client', 'file-provider', 'pause']);
    for (const image of Object.values(images.byRole)) {
      // What `ctr images import` names the image: the archive's RepoTags.
      const archive = JSON.parse(execFileSync('tar', ['-xOf', image.tarball, 'manifest.json'], { encoding: 'utf8' })) as { RepoTags: string[] }[];
      expect([image.role, archive.map((a) => a.RepoTags)]).toEqual([image.role, [[image.name]]]);
      expect(image.inputs).toMatch(/^sha256:[0-9a-f]{16}$/);
    }
  });

  it('marks as stand-ins the images built on the stand-in bases and the sandbox image, and labels each so', () => {
    const standIns = Object.values(images.byRole)
      .filter((i) => i.standIn)
      .map((i) => i.role)
      .sort();
    expect(standIns).toEqual(['controller', 'controller-hsm', 'file-provider', 'pause']);
    for (const role of standIns) expect([role, config(role).Labels?.['io.eso-mtls.stand-in']]).toEqual([role, 'true']);
    expect(config('controller').Labels?.['io.eso-mtls.stand-in.for']).toBe('gcr.io/distroless/nodejs24-debian13:nonroot');
    expect(config('eso-client').Labels?.['io.eso-mtls.stand-in']).toBeUndefined();
  });

  it('names the sandbox image as the containerd the node runs pins it (its DefaultSandboxImage)', () => {
    const dir = execFileSync('go', ['mod', 'download', '-json', 'github.com/containerd/containerd/v2'], {
      cwd: join(root, 'testing/node/containerd'),
      encoding: 'utf8',
    });
    const source = readFileSync(join((JSON.parse(dir) as { Dir: string }).Dir, 'internal/cri/config/config.go'), 'utf8');
    const pinned = /DefaultSandboxImage\s*=\s*"([^"]+)"/.exec(source)?.[1];
    expect(pinned).toMatch(/^registry\.k8s\.io\/pause:/);
    expect(images.byRole.pause.name).toBe(pinned);
  });
});

describe('the built images, run under runc with no network', () => {
  it('controller: the entrypoint runs the eso-mtls CLI, as uid 65532, and prints the version', () => {
    expect(config('controller').User).toBe('65532');
    const r = run('controller', ['--version']);
    expect({ status: r.status, stderr: r.stderr }).toEqual({ status: 0, stderr: '' });
    expect(r.stdout.trim()).toContain(version);
  });

  it('controller-hsm: the same CLI, and the PKCS#11 binding loads the SoftHSM2 module from /opt/hsm with the libraries it brought', () => {
    expect(config('controller-hsm').User).toBe('65532');
    expect(run('controller-hsm', ['--version']).stdout.trim()).toContain(version);
    const load = "const { PKCS11 } = require('pkcs11js'); new PKCS11().load('/opt/hsm/libsofthsm2.so'); console.log('loaded');";
    const r = run('controller-hsm', ['-e', load], ['/nodejs/bin/node']);
    expect({ status: r.status, stderr: r.stderr, stdout: r.stdout.trim() }).toEqual({ status: 0, stderr: '', stdout: 'loaded' });
  });

  it('controller, controller-hsm: no developer tools (no vega, vega-lite, @eso-mtls/devtools or cluster launcher), and dev-certs names the package to install', () => {
    // Every path under /app whose last part is one of them; distroless has no shell, so Node lists them.
    const scan =
      "const hits = require('node:fs').readdirSync('/app', { recursive: true }).filter((p) => /(^|\\/)(vega|vega-lite|devtools|control-plane\\.js)$/.test(p)); console.log(JSON.stringify(hits));";
    for (const role of ['controller', 'controller-hsm'] as const) {
      const r = run(role, ['-e', scan], ['/nodejs/bin/node']);
      expect({ role, status: r.status, stderr: r.stderr, found: r.stdout.trim() }).toEqual({ role, status: 0, stderr: '', found: '[]' });
      const devCerts = run(role, ['dev-certs', '--help']);
      expect({ role, status: devCerts.status }).toEqual({ role, status: 1 });
      expect(devCerts.stderr).toContain('eso-mtls dev-certs needs @eso-mtls/devtools, which is not installed');
    }
  });

  it('file-provider: the entrypoint starts the compiled example, which reads its configuration', () => {
    const r = run('file-provider', []);
    // No configuration given: the example's own error, not a module that failed to load.
    expect(r.stderr).not.toContain('ERR_MODULE_NOT_FOUND');
    expect(r.status).not.toBe(0);
    expect(r.stderr).toContain('file-provider: no data file: pass --data-file or set DATA_FILE');
  });

  it('eso-client: the static Go client runs alone in its image, as uid 65532', () => {
    expect(config('eso-client').User).toBe('65532:65532');
    const r = run('eso-client', ['-h']);
    expect(r.stderr).toContain('-cert-dir');
  });
});

describe('npm run images -- --push (scripts/images.sh)', () => {
  it('refuses, before building anything, when the base images in the builder storage are stand-ins', () => {
    const before = buildah(images, ['images', '--noheading', '--format', '{{.Name}}:{{.Tag}}']).stdout;
    const r = spawnSync('bash', [join(root, 'scripts/images.sh'), '--push'], {
      cwd: root,
      encoding: 'utf8',
      // buildah on the stand-ins' private storage root, as someone who pointed it there would.
      env: { ...process.env, ESO_MTLS_IMAGE_BUILDER: 'buildah', CONTAINERS_STORAGE_CONF: images.storageConf },
    });
    expect(r.status).toBe(4);
    expect(r.stderr).toContain("refusing to push: deploy/docker/controller.Dockerfile's base image node:24-trixie-slim carries io.eso-mtls.stand-in=true");
    expect(r.stderr).toContain('docker.io/library/node:24-trixie-slim');
    expect(r.stderr).not.toContain('building');
    expect(r.stdout).toBe('');
    expect(buildah(images, ['images', '--noheading', '--format', '{{.Name}}:{{.Tag}}']).stdout).toBe(before);
  });
});
