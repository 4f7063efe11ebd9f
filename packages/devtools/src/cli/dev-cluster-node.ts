import { randomBytes } from 'node:crypto';
import { rmSync, writeFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import { locateBinaries } from '../cluster/binaries.js';
import { writeKubeconfig } from '../cluster/identities.js';
import { type RealCluster, realNodeUnavailable, startRealCluster } from '../cluster/node/cluster.js';
import { locateNodeBinaries } from '../cluster/node/components.js';
import { splitImageName } from '../cluster/node/image-name.js';
import type { ServerProcess } from '../cluster/process-group.js';
import type { Clone } from '../dev-cluster/clone.js';
import { prepareDataDir } from '../dev-cluster/data-dir.js';
import { type NodeImages, locateImages } from '../dev-cluster/images.js';
import { nextStepPaths, shellPath, shellQuote } from '../dev-cluster/shell-path.js';
import { type CliStreams, listenForStop } from '@eso-mtls/controller';

const COMMAND = 'eso-mtls dev-cluster';
const ESO_NAMESPACE = 'external-secrets-system';

/** Where the printed commands point, and where the reader runs them from. */
export interface NodeClusterFiles {
  readonly dir: string;
  readonly adminKubeconfig: string;
  /** {@link imagesEnv}'s file. */
  readonly imagesEnv: string;
  readonly repositoryRoot: string;
  readonly cwd: string;
  /** The nodes' names (one unless --nodes); absent: the one node. */
  readonly nodes?: readonly string[];
}

/**
 * images.env in the folder: the images as shell variables, so that a page or script can `source`
 * it and name the local images without copying their tags from the terminal.
 */
export function imagesEnv(images: NodeImages): string {
  const { repository, tag } = splitImageName(images.controller.name);
  const line = (name: string, value: string): string => `export ${name}=${shellQuote(value)}`;
  return [
    '# The images eso-mtls dev-cluster --node imported into its node (never pulled); `source` this file.',
    line('CONTROLLER_REPOSITORY', repository),
    line('CONTROLLER_TAG', tag),
    line('FILE_PROVIDER_IMAGE', images.fileProvider.name),
    '',
  ].join('\n');
}

/**
 * A kustomize example with the example's image (eso-mtls/file-provider:<version>, which nothing
 * here could pull) replaced by the local one, never pulled: the same indentation, a line added.
 */
function applyExample(example: string, image: string): string {
  return `kubectl kustomize deploy/examples/${example} | sed 's|^\\( *\\)image: eso-mtls/file-provider:.*|\\1image: ${image}\\n\\1imagePullPolicy: Never|' | kubectl apply -f -`;
}

/** The first lines of {@link nodeReadyText}: what runs, and where. */
function readyHeadline(nodes: readonly string[]): string[] {
  if (nodes.length <= 1)
    return [
      `${COMMAND}: ready. A real node (containerd, runc, the kubelet, kube-proxy) with etcd, kube-apiserver, kube-controller-manager,`,
      'kube-scheduler and CoreDNS, the node and the control plane each in network, mount and PID namespaces of their own;',
    ];
  return [
    `${COMMAND}: ready. ${nodes.length} real nodes (${nodes.join(', ')}), each with its own containerd, runc, kubelet and`,
    'kube-proxy, and etcd, kube-apiserver, kube-controller-manager, kube-scheduler and CoreDNS, each node and the control plane',
    'in network, mount and PID namespaces of their own; `kubectl get nodes -o wide` lists them;',
  ];
}

/** What `dev-cluster --node` prints once the node is Ready: where things are, and the next commands. */
export function nodeReadyText(plane: { readonly url: string }, images: NodeImages, files: NodeClusterFiles): string {
  const { here: p, cd, fromRoot: q } = nextStepPaths(files.cwd, files.repositoryRoot);
  const { repository, tag } = splitImageName(images.controller.name);
  return [
    ...readyHeadline(files.nodes ?? []),
    `kube-apiserver is reached at ${plane.url}.`,
    `  folder:  ${p(files.dir)} (removed on Ctrl-C)`,
    `  admin:   ${p(files.adminKubeconfig)}`,
    `  images:  ${p(files.imagesEnv)} names them for scripts (\`source\` it)`,
    `           ${images.all.map((i) => i.name).join(', ')}`,
    `           imported into ${(files.nodes?.length ?? 1) > 1 ? 'every node' : 'the node'}: nothing is pulled, so pods name them with imagePullPolicy Never.`,
    '',
    'Next, in another terminal: install the chart with the local image, in both modes (Secrets and pod certificates),',
    'and watch its two pods become Ready:',
    ...cd.map((c) => `  ${c}`),
    `  export KUBECONFIG=${q(files.adminKubeconfig)}`,
    `  helm install eso-mtls deploy/helm/eso-mtls --namespace ${ESO_NAMESPACE} --create-namespace \\`,
    `    --set image.repository=${repository} --set image.tag=${tag} --set image.pullPolicy=Never \\`,
    `    --set 'modes={secret,pod-certificate}'`,
    `  kubectl -n ${ESO_NAMESPACE} rollout status deployment/eso-mtls-controller --timeout=5m`,
    'Deploy the example provider with the local image; the controller writes its Secret, and it serves with it:',
    `  ${applyExample('file-provider', images.fileProvider.name)}`,
    '  kubectl -n provider-file rollout status deployment/file-provider --timeout=5m',
    '  npx eso-mtls status',
    'Switch it to pod certificates: the kubelet makes the key and asks, the controller signs:',
    `  ${applyExample('file-provider-pod-certificates', images.fileProvider.name)}`,
    '  kubectl -n provider-file rollout status deployment/file-provider --timeout=5m',
    '  npx eso-mtls status --modes=secret,pod-certificate',
    '(No helm or kubectl? `bash scripts/ensure-helm.sh` and `bash scripts/ensure-kubectl.sh` build them and print their paths.)',
    '',
    `Press Ctrl-C to stop ${(files.nodes?.length ?? 1) > 1 ? 'the nodes' : 'the node'} and the control plane.`,
    '',
  ].join('\n');
}

/**
 * `eso-mtls dev-cluster --node`: builds or finds the binaries and images, starts the real cluster
 * in `dir`, runs until SIGINT or SIGTERM, then stops everything and removes the folder. Resolves
 * with the exit code: 0 after a clean stop, 1 if this machine cannot run a node, it could not
 * start, or a component died.
 */
export async function runNodeCluster(args: { readonly dir: string; readonly nodes: number }, clone: Clone, streams: CliStreams): Promise<number> {
  const say = (line: string): unknown => streams.stdout.write(`${line}\n`);
  const complain = (line: string): unknown => streams.stderr.write(`${COMMAND}: ${line}\n`);
  const unavailable = realNodeUnavailable();
  if (unavailable !== undefined) {
    complain(`--node: this machine cannot run a real node: ${unavailable}.`);
    complain('Without --node, dev-cluster runs etcd and kube-apiserver alone, which needs none of this (Pods then never start).');
    return 1;
  }
  const runId = randomBytes(4).toString('hex');
  const dir = shellPath(args.dir, process.cwd());
  const signals = listenForStop((signal) =>
    complain(
      `second ${signal}: exiting now. Every process of the node and its control plane dies with their namespaces, which the kernel ` +
        `kills when this process exits; ${dir} stays (rm -rf ${dir}), and so do the empty cgroup folders eso-mtls-${runId} ` +
        `(find /sys/fs/cgroup -depth -type d -path '*/eso-mtls-${runId}*' -delete)`,
    ),
  );
  const progress = (line: string): unknown => say(`  ${line}`);
  let cluster: RealCluster | undefined;
  let created = false;
  try {
    const started = Date.now();
    say(
      `${COMMAND}: getting the binaries and images (${[clone.buildScript, clone.nodeBuildScript, clone.imagesScript].map((s) => relative(clone.root, s)).join(', ')}; cached in ~/.cache/eso-mtls)`,
    );
    say('  the first build takes 15 to 40 minutes on 2 cores (Go modules, then buildah); later starts take about a minute');
    const controlPlaneBinaries = await locateBinaries(clone.buildScript, progress);
    const nodeBinaries = await locateNodeBinaries(clone.nodeBuildScript, progress);
    const images = await locateImages(clone.imagesScript, progress);
    if (signals.requested()) return 0;
    if (prepareDataDir(args.dir).reused) {
      complain(
        `--dir ${args.dir} holds an earlier dev-cluster's data; --node starts from an empty folder and removes it on Ctrl-C: remove it (rm -rf ${dir}) or choose another --dir`,
      );
      return 1;
    }
    created = true;
    say(`${COMMAND}: starting ${args.nodes === 1 ? 'the node' : `${args.nodes} nodes`} in ${dir}`);
    cluster = await startRealCluster({
      dir: args.dir,
      runId,
      controlPlaneBinaries,
      nodeBinaries,
      images: images.all.map((i) => i.tarball),
      nodes: args.nodes,
      progress,
    });
    const adminKubeconfig = join(args.dir, 'admin.kubeconfig');
    writeKubeconfig(adminKubeconfig, cluster.controlPlane.kubeconfigFor('admin'));
    const imagesEnvFile = join(args.dir, 'images.env');
    writeFileSync(imagesEnvFile, imagesEnv(images));
    if (signals.requested()) {
      await cluster.stop();
      return 0;
    }
    say(`${COMMAND}: up in ${Math.round((Date.now() - started) / 1000)} s`);
    streams.stdout.write(
      nodeReadyText(cluster.controlPlane, images, {
        dir: args.dir,
        adminKubeconfig,
        imagesEnv: imagesEnvFile,
        repositoryRoot: clone.root,
        cwd: process.cwd(),
        nodes: cluster.nodes.map((n) => n.name),
      }),
    );
  } catch (e) {
    complain(`could not start: ${(e as Error).message}`);
    await cluster?.stop();
    if (created) rmSync(args.dir, { recursive: true, force: true });
    return 1;
  }

  const processes = cluster.processes();
  const died = await Promise.race([signals.stopped.then(() => undefined), ...processes.map((p) => p.whenExited().then((): ServerProcess => p))]);
  if (died !== undefined) {
    complain(`${died.name} exited by itself; the end of its log (${died.logPath}, kept with its folder):\n${died.logTail()}`);
    await cluster.stop({ keepDir: true });
    return 1;
  }
  say(`${COMMAND}: ${signals.requested()}: stopping the node and its control plane`);
  await cluster.stop();
  say(`${COMMAND}: stopped; ${dir} removed`);
  return 0;
}
