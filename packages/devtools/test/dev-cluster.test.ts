import { afterAll, describe, expect, it } from '@jest/globals';
import { execFile } from 'node:child_process';
import { chmodSync, cpSync, existsSync, mkdirSync, mkdtempSync, readdirSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { imagesEnv, nodeReadyText } from '../src/cli/dev-cluster-node.js';
import { KEEP_WITH_NODE, parseDevClusterArgs, readyText } from '../src/cli/dev-cluster.js';
import { locateBinaries } from '../src/cluster/binaries.js';
import { findClone } from '../src/dev-cluster/clone.js';
import { prepareDataDir } from '../src/dev-cluster/data-dir.js';
import { splitImageName } from '../src/cluster/node/image-name.js';
import { imagesIn } from '../src/dev-cluster/images.js';
import { shellPath } from '../src/dev-cluster/shell-path.js';
import { repoRoot } from '@eso-mtls/test-kit/repo';

// `eso-mtls dev-cluster` without its servers: flags, what it prints, the folder it may use, and
// what an installed package (no clone around it) says. The real start, the printed commands and
// Ctrl-C run end to end in testing/getting-started/getting-started.test.ts.

const temp = mkdtempSync(join(tmpdir(), 'eso-mtls-dev-cluster-test-'));
afterAll(() => rmSync(temp, { recursive: true, force: true }));

describe('eso-mtls dev-cluster', () => {
  it('reads --dir (resolved against the working folder, default .eso-mtls-dev) and --keep, and words flag errors plainly', () => {
    expect(parseDevClusterArgs([], '/home/me/clone')).toEqual({ dir: '/home/me/clone/.eso-mtls-dev', keep: false, node: false, nodes: 1 });
    expect(parseDevClusterArgs(['--dir', 'x/y', '--keep'], '/w')).toEqual({ dir: '/w/x/y', keep: true, node: false, nodes: 1 });
    expect(parseDevClusterArgs(['--dir=/abs', '--keep=false'], '/w')).toEqual({ dir: '/abs', keep: false, node: false, nodes: 1 });
    expect(parseDevClusterArgs(['-h'])).toBe('help');
    expect(parseDevClusterArgs(['--kep'])).toEqual({ error: 'unknown flag --kep (did you mean --keep?); see eso-mtls dev-cluster --help' });
    expect(parseDevClusterArgs(['--dir'])).toEqual({ error: 'flag --dir needs a value: a folder path' });
    expect(parseDevClusterArgs(['--dir='])).toEqual({ error: 'flag --dir needs a folder path, not an empty one' });
    expect(parseDevClusterArgs(['--keep=yes'])).toEqual({ error: '--keep: "yes" is not true or false' });
  });

  it('reads --node, and refuses it with --keep, saying why', () => {
    expect(parseDevClusterArgs(['--node'], '/w')).toEqual({ dir: '/w/.eso-mtls-dev', keep: false, node: true, nodes: 1 });
    expect(parseDevClusterArgs(['--node=false', '--keep', '--dir=d'], '/w')).toEqual({ dir: '/w/d', keep: true, node: false, nodes: 1 });
    expect(parseDevClusterArgs(['--node', '--keep'])).toEqual({ error: KEEP_WITH_NODE });
    expect(KEEP_WITH_NODE).toMatch(/^--keep cannot be combined with --node: a node lives in namespaces that die with this process.*Drop --keep/);
    expect(parseDevClusterArgs(['--node=sometimes'])).toEqual({ error: '--node: "sometimes" is not true or false' });
    expect(parseDevClusterArgs(['--nodex'])).toEqual({ error: 'unknown flag --nodex (did you mean --node?); see eso-mtls dev-cluster --help' });
  });

  it('reads --nodes beside --node, and refuses it alone or out of 1..8, saying why', () => {
    expect(parseDevClusterArgs(['--node', '--nodes', '2'], '/w')).toEqual({ dir: '/w/.eso-mtls-dev', keep: false, node: true, nodes: 2 });
    expect(parseDevClusterArgs(['--node', '--nodes=1'], '/w')).toMatchObject({ nodes: 1 });
    expect(parseDevClusterArgs(['--nodes', '2'])).toEqual({ error: '--nodes 2 asks for real nodes: add --node (without it no kubelet runs)' });
    for (const bad of ['0', '9', '1.5', 'two', '-1', ''])
      expect(parseDevClusterArgs(['--node', `--nodes=${bad}`])).toEqual({
        error: expect.stringMatching(/^--nodes: .* is not a whole number from 1 to 8$|needs/),
      });
  });

  it('with --node, prints the helm install of the imported controller image, the example provider with the imported image, and pod certificates', () => {
    const images = {
      controller: { name: 'localhost/eso-mtls/controller:0123abcd', tarball: '/i/controller.tar' },
      fileProvider: { name: 'localhost/eso-mtls/file-provider:4567ef', tarball: '/i/file-provider.tar' },
      all: [] as { name: string; tarball: string }[],
    };
    images.all.push(images.controller, images.fileProvider, { name: 'registry.k8s.io/pause:3.10', tarball: '/i/pause.tar' });
    const files = {
      dir: '/c/.eso-mtls-dev',
      adminKubeconfig: '/c/.eso-mtls-dev/admin.kubeconfig',
      imagesEnv: '/c/.eso-mtls-dev/images.env',
      repositoryRoot: '/c',
      cwd: '/c',
    };
    const text = nodeReadyText({ url: 'https://127.0.0.1:40000' }, images, files);
    expect(text).toContain('kube-apiserver is reached at https://127.0.0.1:40000.');
    expect(text).toContain('localhost/eso-mtls/controller:0123abcd, localhost/eso-mtls/file-provider:4567ef, registry.k8s.io/pause:3.10');
    expect(text).toContain(
      '  export KUBECONFIG=.eso-mtls-dev/admin.kubeconfig\n' +
        '  helm install eso-mtls deploy/helm/eso-mtls --namespace external-secrets-system --create-namespace \\\n' +
        '    --set image.repository=localhost/eso-mtls/controller --set image.tag=0123abcd --set image.pullPolicy=Never \\\n' +
        "    --set 'modes={secret,pod-certificate}'\n" +
        '  kubectl -n external-secrets-system rollout status deployment/eso-mtls-controller --timeout=5m\n',
    );
    const sed = "sed 's|^\\( *\\)image: eso-mtls/file-provider:.*|\\1image: localhost/eso-mtls/file-provider:4567ef\\n\\1imagePullPolicy: Never|'";
    expect(text).toContain(`  kubectl kustomize deploy/examples/file-provider | ${sed} | kubectl apply -f -\n`);
    expect(text).toContain(`  kubectl kustomize deploy/examples/file-provider-pod-certificates | ${sed} | kubectl apply -f -\n`);
    expect(text).toContain('  npx eso-mtls status --modes=secret,pod-certificate\n');
    expect(text).toContain('Press Ctrl-C to stop the node and the control plane.');
    const two = nodeReadyText({ url: 'https://127.0.0.1:40000' }, images, { ...files, nodes: ['eso-mtls-node', 'eso-mtls-node-2'] });
    expect(two).toContain('2 real nodes (eso-mtls-node, eso-mtls-node-2), each with its own containerd');
    expect(two).toContain('imported into every node');
    expect(text).not.toMatch(/^ {2}cd /m);
    const elsewhere = nodeReadyText({ url: 'https://127.0.0.1:1' }, images, { ...files, dir: '/t/d', adminKubeconfig: '/t/d/admin.kubeconfig', cwd: '/t' });
    expect(elsewhere).toContain('  cd /c\n  export KUBECONFIG=/t/d/admin.kubeconfig\n');

    expect(imagesEnv(images)).toBe(
      '# The images eso-mtls dev-cluster --node imported into its node (never pulled); `source` this file.\n' +
        'export CONTROLLER_REPOSITORY=localhost/eso-mtls/controller\nexport CONTROLLER_TAG=0123abcd\nexport FILE_PROVIDER_IMAGE=localhost/eso-mtls/file-provider:4567ef\n',
    );
    expect(splitImageName('localhost:5000/eso-mtls/controller:v1')).toEqual({ repository: 'localhost:5000/eso-mtls/controller', tag: 'v1' });
    expect(() => splitImageName('localhost:5000/eso-mtls/controller')).toThrow('image "localhost:5000/eso-mtls/controller" has no tag');
  });

  it("reads the images from the manifest.json of scripts/ensure-images.sh's folder, and finds none where the controller or file-provider is missing", () => {
    const set = join(temp, 'set');
    mkdirSync(set);
    expect(imagesIn(set)).toBeUndefined();
    const manifest = {
      images: {
        'localhost/eso-mtls/controller:aa': { role: 'controller', tarball: 'controller.tar', standIn: true, inputs: 'sha256:aa' },
        'registry.k8s.io/pause:3.10': { role: 'pause', tarball: 'pause.tar', standIn: false, inputs: 'sha256:bb' },
      },
    };
    writeFileSync(join(set, 'manifest.json'), JSON.stringify(manifest));
    expect(imagesIn(set)).toBeUndefined();
    Object.assign(manifest.images, {
      'localhost/eso-mtls/file-provider:cc': { role: 'file-provider', tarball: 'file-provider.tar', standIn: true, inputs: 'sha256:cc' },
    });
    writeFileSync(join(set, 'manifest.json'), JSON.stringify(manifest));
    expect(imagesIn(set)).toEqual({
      controller: { name: 'localhost/eso-mtls/controller:aa', tarball: join(set, 'controller.tar') },
      fileProvider: { name: 'localhost/eso-mtls/file-provider:cc', tarball: join(set, 'file-provider.tar') },
      all: [
        { name: 'localhost/eso-mtls/controller:aa', tarball: join(set, 'controller.tar') },
        { name: 'registry.k8s.io/pause:3.10', tarball: join(set, 'pause.tar') },
        { name: 'localhost/eso-mtls/file-provider:cc', tarball: join(set, 'file-provider.tar') },
      ],
    });
  });

  it('spells paths in the printed commands relative to where the reader is, quoted when the shell needs it', () => {
    expect(shellPath('/w/.eso-mtls-dev/admin.kubeconfig', '/w')).toBe('.eso-mtls-dev/admin.kubeconfig');
    expect(shellPath('/elsewhere/k', '/w')).toBe('/elsewhere/k');
    expect(shellPath("/my dir/it's", '/w')).toBe(`'/my dir/it'\\''s'`);
  });

  it('prints where things are, says no kubelet runs, and the commands of the next steps', () => {
    const text = readyText(
      { url: 'https://127.0.0.1:40000' },
      { namespace: 'external-secrets-system', name: 'eso-mtls-controller' },
      {
        dir: '/c/.eso-mtls-dev',
        adminKubeconfig: '/c/.eso-mtls-dev/admin.kubeconfig',
        controllerKubeconfig: '/c/.eso-mtls-dev/controller.kubeconfig',
        repositoryRoot: '/c',
        cwd: '/c',
      },
      false,
    );
    expect(text).toContain('No kubelet runs here: Pods');
    expect(text).toContain('the controller runs out of the cluster');
    expect(text).toContain('  export KUBECONFIG=.eso-mtls-dev/admin.kubeconfig\n  kubectl apply --server-side -k deploy\n');
    expect(text).toContain('kubectl label service vault -n team-a external-secrets.io/provider=true');
    expect(text).toContain('npx eso-mtls controller --kubeconfig .eso-mtls-dev/controller.kubeconfig');
    expect(text).toContain('npx eso-mtls status --kubeconfig .eso-mtls-dev/admin.kubeconfig');
    expect(text).toContain('Press Ctrl-C to stop etcd and kube-apiserver.');
    expect(text).not.toMatch(/^ {2}cd /m); // already in the clone's root
    const elsewhere = readyText(
      { url: 'https://127.0.0.1:40000' },
      { namespace: 'n', name: 'sa' },
      { dir: '/t/d', adminKubeconfig: '/t/d/admin.kubeconfig', controllerKubeconfig: '/t/d/controller.kubeconfig', repositoryRoot: '/c', cwd: '/t' },
      true,
    );
    expect(elsewhere).toContain('  cd /c\n  export KUBECONFIG=/t/d/admin.kubeconfig\n');
    expect(elsewhere).toContain('kept on Ctrl-C (--keep)');
  });

  it('uses a new or empty folder, reuses one it kept, and refuses a folder of something else', () => {
    const fresh = join(temp, 'fresh');
    expect(prepareDataDir(fresh)).toEqual({ reused: false });
    expect(readdirSync(fresh)).toEqual(['.eso-mtls-dev-cluster']);
    expect(prepareDataDir(fresh)).toEqual({ reused: true });
    const empty = join(temp, 'empty');
    mkdirSync(empty);
    expect(prepareDataDir(empty)).toEqual({ reused: false });
    const foreign = join(temp, 'foreign');
    mkdirSync(foreign);
    writeFileSync(join(foreign, 'thesis.tex'), '');
    expect(() => prepareDataDir(foreign)).toThrow(
      `--dir ${foreign} exists and is not a dev-cluster folder (no .eso-mtls-dev-cluster in it): choose another --dir`,
    );
    expect(readdirSync(foreign)).toEqual(['thesis.tex']);
  });

  it('finds the clone it runs from, and none from an installed package', () => {
    expect(findClone()?.root).toBe(repoRoot);
    expect(findClone(join(temp, 'node_modules', '@eso-mtls', 'devtools', 'dist', 'dev-cluster'))).toBeUndefined();
  });

  it("passes the build script's progress on line by line, and explains its failure with what to do", async () => {
    const bin = join(temp, 'bin');
    mkdirSync(bin);
    for (const name of ['kube-apiserver', 'etcd']) {
      writeFileSync(join(bin, name), '#!/bin/sh\n');
      chmodSync(join(bin, name), 0o755);
    }
    const script = join(temp, 'build.sh');
    writeFileSync(script, `echo 'build-testbin: building etcd v3' >&2\nprintf 'build-testbin: building kube-apiserver' >&2\necho ${bin}\n`);
    const progress: string[] = [];
    expect(await locateBinaries(script, (l) => progress.push(l))).toEqual({ kubeApiServer: join(bin, 'kube-apiserver'), etcd: join(bin, 'etcd') });
    expect(progress).toEqual(['build-testbin: building etcd v3', 'build-testbin: building kube-apiserver']);

    writeFileSync(script, `echo "build-testbin: error: 'go' not found" >&2\nexit 1\n`);
    await expect(locateBinaries(script, () => undefined)).rejects.toThrow(
      `${script} could not provide kube-apiserver and etcd: it failed (exit code 1).\nbuild-testbin: error: 'go' not found\n` +
        'Install Go (https://go.dev/dl) so the script can build them, or set KUBEBUILDER_ASSETS to a folder holding kube-apiserver and etcd.',
    );
  });

  it('--node where the machine cannot run a node (here: not root) says exactly why and what to do, exit code 1, and starts nothing', async () => {
    const cli = join(repoRoot, 'packages', 'controller', 'dist', 'bin', 'eso-mtls.js');
    if (!existsSync(cli)) throw new Error(`${cli} is missing: run \`npm run build\` first`);
    // As root, the same CLI run as nobody (setpriv, util-linux); elsewhere it is not root already.
    const asNobody = process.getuid?.() === 0 ? ['setpriv', '--reuid=65534', '--regid=65534', '--clear-groups', process.execPath] : [process.execPath];
    const dir = join(temp, 'node-refused');
    const run = await new Promise<{ code: number | null; stdout: string; stderr: string }>((resolveRun) =>
      execFile(asNobody[0]!, [...asNobody.slice(1), cli, 'dev-cluster', '--node', '--dir', dir], { cwd: tmpdir(), timeout: 60_000 }, (e, stdout, stderr) =>
        resolveRun({ code: e ? (typeof e.code === 'number' ? e.code : null) : 0, stdout, stderr }),
      ),
    );
    expect(run).toEqual({
      code: 1,
      stdout: '',
      stderr:
        'eso-mtls dev-cluster: --node: this machine cannot run a real node: the real node needs root: it creates network, mount and PID namespaces, mounts overlays and writes cgroups.\n' +
        'eso-mtls dev-cluster: Without --node, dev-cluster runs etcd and kube-apiserver alone, which needs none of this (Pods then never start).\n',
    });
    expect(existsSync(dir)).toBe(false);
  }, 90_000);

  it('run from an installed package, says it needs a clone and where to run it, exit code 1', async () => {
    // The compiled packages outside any clone: the controller's in <project>/pkg/{dist,package.json}
    // and this one's in <project>/node_modules/@eso-mtls/devtools, where the controller's eso-mtls
    // finds it; every other dependency resolved through links to the clone's node_modules.
    const built = (pkg: string) => join(repoRoot, 'packages', pkg, 'dist');
    for (const pkg of ['controller', 'devtools']) if (!existsSync(built(pkg))) throw new Error(`${built(pkg)} is missing: run \`npm run build\` first`);
    const project = join(temp, 'project');
    const installed = (pkg: string, at: string) => {
      cpSync(built(pkg), join(at, 'dist'), { recursive: true });
      cpSync(join(repoRoot, 'packages', pkg, 'package.json'), join(at, 'package.json'));
    };
    installed('controller', join(project, 'pkg'));
    mkdirSync(join(project, 'node_modules', '@eso-mtls'), { recursive: true });
    for (const name of readdirSync(join(repoRoot, 'node_modules')).filter((n) => n !== '@eso-mtls'))
      symlinkSync(join(repoRoot, 'node_modules', name), join(project, 'node_modules', name));
    for (const name of readdirSync(join(repoRoot, 'node_modules', '@eso-mtls')).filter((n) => n !== 'devtools'))
      symlinkSync(join(repoRoot, 'node_modules', '@eso-mtls', name), join(project, 'node_modules', '@eso-mtls', name));
    installed('devtools', join(project, 'node_modules', '@eso-mtls', 'devtools'));
    const run = await new Promise<{ code: number | null; stdout: string; stderr: string }>((resolveRun) =>
      execFile(process.execPath, [join(project, 'pkg', 'dist', 'bin', 'eso-mtls.js'), 'dev-cluster'], { cwd: project, timeout: 60_000 }, (e, stdout, stderr) =>
        resolveRun({ code: e ? (typeof e.code === 'number' ? e.code : null) : 0, stdout, stderr }),
      ),
    );
    expect(run.code).toBe(1);
    expect(run.stdout).toBe('');
    expect(run.stderr).toMatch(
      /^eso-mtls dev-cluster: dev-cluster runs from a clone of the eso-mtls repository: .*testing\/envtest.*deploy\/.*Clone the repository, run `npm ci` in it/,
    );
    expect(existsSync(join(project, '.eso-mtls-dev'))).toBe(false);
  }, 90_000);
});
