import { execFile } from 'node:child_process';
import { existsSync, mkdirSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { KubeConfig } from '@kubernetes/client-node';
import type { ControlPlaneBinaries } from '../binaries.js';
import { type LaunchedControlPlane, launchControlPlane } from '../control-plane.js';
import { type IdentitySpec, KUBE_CONTROLLER_MANAGER, KUBE_PROXY, KUBE_SCHEDULER, nodeIdentity } from '../identities.js';
import { freePort } from '../ports.js';
import { ServerProcess } from '../process-group.js';
import { NODE_NAME, NODE_NETWORK } from './addresses.js';
import { COREDNS_USER, bootstrapObjects } from './bootstrap.js';
import { cgroupSupport, detectCgroupHost, removeCgroupTree, runCgroupRoot } from './cgroups.js';
import { type ComponentCommand, type NodeBinaries, componentCommands } from './components.js';
import { cniConfig, containerdConfig, corefile, kubeProxyConfig, kubeletConfig, nodePaths } from './configs.js';
import { forwarderArgs } from './forwarder.js';
import { type Sandbox, createSandbox } from './namespaces.js';
import { StopWaiting, applyObjects, namespaceReady, nodeReady, waitFor } from './readiness.js';

const run = promisify(execFile);

/** What a real cluster is started from. */
export interface RealClusterOptions {
  /** The run's folder: every file and all state of the cluster live under it. Made if missing. */
  readonly dir: string;
  /** A name for this run: it names the cgroup subtree (`/eso-mtls-<runId>`). */
  readonly runId: string;
  readonly controlPlaneBinaries: ControlPlaneBinaries;
  readonly nodeBinaries: NodeBinaries;
  /** Image archives (docker-archive or OCI) imported into the node's containerd before the kubelet starts: nothing is ever pulled. */
  readonly images: readonly string[];
  /** The kubelet's syncFrequency (default 1m, as in production; tests may go lower). */
  readonly syncFrequency?: string;
  /** Extra kube-apiserver flags (an audit log, say). */
  readonly apiServerFlags?: readonly string[];
  /** Users besides the node's own components, each with a static token. */
  readonly identities?: readonly IdentitySpec[];
  /** Progress lines for a terminal or a test log. */
  readonly progress?: (line: string) => void;
}

/** A control plane and one real node, all inside the harness's namespaces. */
export interface RealCluster {
  readonly controlPlane: LaunchedControlPlane;
  /** The node's processes, by name (containerd, kubelet, kube-controller-manager, kube-scheduler, kube-proxy, coredns). */
  readonly components: ReadonlyMap<string, ServerProcess>;
  /** The sandbox's PID, for `nsenter --target` (tests reach pods from inside). */
  readonly sandboxPid: number;
  /** The run's cgroup subtree (the kubelet's cgroupRoot), removed by stop(). */
  readonly cgroupRoot: string;
  /** `argv` prefixed to run inside the node's namespaces. */
  enter(argv: readonly string[]): string[];
  /** Stops the kubelet and starts it again (it then forgets its pod-certificate state). */
  restartComponent(name: string): Promise<void>;
  /** Kills everything inside, removes the cgroup subtree and, unless `keepDir`, the folder. Safe to call twice. */
  stop(options?: { readonly keepDir?: boolean }): Promise<void>;
}

/** Why this machine cannot run the real node, or undefined when it can. */
export function realNodeUnavailable(): string | undefined {
  if (process.platform !== 'linux') return `the real node runs only on Linux (this is ${process.platform})`;
  if (process.getuid?.() !== 0) return 'the real node needs root: it creates network, mount and PID namespaces, mounts overlays and writes cgroups';
  const support = cgroupSupport(detectCgroupHost());
  if (!support.ok) return support.reason;
  for (const tool of ['unshare', 'nsenter', 'setpriv', 'ip', 'iptables', 'conntrack', 'runc']) {
    if (!onPath(tool)) return `'${tool}' is not on PATH (Debian: apt-get install util-linux iproute2 iptables conntrack runc)`;
  }
  if (!existsSync('/usr/lib/cni/bridge')) return 'the CNI plugins are missing: /usr/lib/cni/bridge (Debian: apt-get install containernetworking-plugins)';
  return undefined;
}

const COMPONENT_USERS: readonly IdentitySpec[] = [nodeIdentity(NODE_NAME), KUBE_CONTROLLER_MANAGER, KUBE_SCHEDULER, KUBE_PROXY, { name: COREDNS_USER }];

/**
 * Starts etcd, kube-apiserver, containerd, the kubelet, kube-controller-manager, kube-scheduler,
 * kube-proxy and CoreDNS inside fresh mount, network and PID namespaces, and resolves once the
 * node is Ready, the default ServiceAccount and `kube-root-ca.crt` exist and cluster DNS answers.
 * On any failure everything started so far is stopped before it rejects.
 */
export async function startRealCluster(options: RealClusterOptions): Promise<RealCluster> {
  const unavailable = realNodeUnavailable();
  if (unavailable !== undefined) throw new Error(`cannot run a real node here: ${unavailable}`);
  const say = options.progress ?? (() => undefined);
  const dir = options.dir;
  mkdirSync(dir, { recursive: true, mode: 0o700 });
  const paths = nodePaths(join(dir, 'node'));
  for (const d of [
    join(dir, 'control-plane'),
    paths.containerdRoot,
    paths.containerdState,
    paths.kubeletRoot,
    paths.podLogs,
    paths.cniConfDir,
    paths.cniDataDir,
    join(dir, 'logs'),
  ])
    mkdirSync(d, { recursive: true });
  const cgroupRoot = runCgroupRoot(options.runId);
  const started: ServerProcess[] = [];
  let sandbox: Sandbox | undefined;
  let controlPlane: LaunchedControlPlane | undefined;

  // Nothing inside needs a graceful stop: killing the namespaces' PID 1 kills every process in
  // them at once, after which each watchdog and nsenter on the host exits by itself.
  // A namespace slow to empty is reported, after the rest is stopped all the same.
  const stopAll = async (): Promise<void> => {
    try {
      await sandbox?.destroy();
    } finally {
      for (const p of started) await p.stop(1000);
      await controlPlane?.stop();
      await waitFor(() => removeCgroupTree(cgroupRoot).length === 0, 10_000, `the cgroup subtree ${cgroupRoot} to be removable`).catch(() => undefined);
    }
  };

  try {
    say('creating the network, mount and PID namespaces');
    const sb = await createSandbox(dir);
    sandbox = sb;
    const binDir = options.nodeBinaries.dir;
    const enter = (argv: readonly string[]): string[] =>
      sb.enter(['env', `PATH=${binDir}:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin`, ...argv]);
    const start = (c: ComponentCommand): ServerProcess => {
      const p = ServerProcess.start(c.name, c.argv[0]!, c.argv.slice(1), join(dir, 'logs', `${c.name}.log`), enter);
      started.push(p);
      return p;
    };

    // The host reaches the apiserver through a unix socket: nothing of the host's network enters the namespace.
    const socket = join(dir, 'apiserver.sock');
    start({ name: 'apiserver-forwarder', argv: [process.execPath, ...forwarderArgs(`unix:${socket}`, `tcp:127.0.0.1:${NODE_NETWORK.apiServerPort}`)] });
    await waitFor(() => existsSync(socket), 30_000, 'the apiserver forwarder inside the namespace');
    const hostPort = await freePort();
    const hostForwarder = ServerProcess.start(
      'apiserver-forwarder-host',
      process.execPath,
      forwarderArgs(`tcp:127.0.0.1:${hostPort}`, `unix:${socket}`),
      join(dir, 'logs', 'apiserver-forwarder-host.log'),
    );
    started.push(hostForwarder);
    await waitFor(() => hostForwarder.logTail().includes('listening'), 30_000, 'the apiserver forwarder on the host');

    say('starting etcd and kube-apiserver inside the namespaces');
    controlPlane = await launchControlPlane({
      binaries: options.controlPlaneBinaries,
      dir: join(dir, 'control-plane'),
      identities: [...COMPONENT_USERS, ...(options.identities ?? [])],
      nodeAuthorization: true,
      // The kubelet by the address it registered, never by its name (nothing inside resolves it).
      apiServerFlags: ['--kubelet-preferred-address-types=InternalIP', ...(options.apiServerFlags ?? [])],
      wrap: enter,
      bindAddress: '0.0.0.0',
      advertiseAddress: NODE_NETWORK.nodeIp,
      securePort: NODE_NETWORK.apiServerPort,
      serviceClusterIpRange: NODE_NETWORK.serviceCidr,
      clientUrl: `https://127.0.0.1:${hostPort}`,
      clientTlsServerName: 'kubernetes.default.svc',
    });
    const plane = controlPlane;

    const kubeconfigFile = (user: string): string => {
      const file = join(dir, `kubeconfig-${user.replace(/[^A-Za-z0-9._-]/g, '_')}.json`);
      writeFileSync(file, plane.kubeconfigFor(user, { advertised: true }).exportConfig(), { mode: 0o600 });
      return file;
    };
    const kubeconfigs = {
      kubelet: kubeconfigFile(`system:node:${NODE_NAME}`),
      controllerManager: kubeconfigFile(KUBE_CONTROLLER_MANAGER.name),
      scheduler: kubeconfigFile(KUBE_SCHEDULER.name),
      proxy: kubeconfigFile(KUBE_PROXY.name),
      coredns: kubeconfigFile(COREDNS_USER),
    };
    const file = (name: string, content: string): string => {
      const f = join(dir, name);
      writeFileSync(f, content);
      return f;
    };
    const files = {
      containerdConfig: file('containerd.toml', containerdConfig(paths, options.nodeBinaries.runc, options.nodeBinaries.cniBinDir)),
      kubeletConfig: file('kubelet.json', kubeletConfig(paths, { cgroupRoot, syncFrequency: options.syncFrequency ?? '1m' })),
      kubeProxyConfig: file('kube-proxy.json', kubeProxyConfig(kubeconfigs.proxy)),
      corefile: file('Corefile', corefile(kubeconfigs.coredns)),
      kubeconfigs,
      // kube-controller-manager publishes this as kube-root-ca.crt and as a ClusterTrustBundle, which must hold only CAs.
      apiServerCa: file('apiserver-ca.crt', lastPemBlock(plane.caPem)),
      serviceAccountKey: plane.serviceAccountKeyFile,
    };
    writeFileSync(join(paths.cniConfDir, '10-eso-mtls.conflist'), cniConfig(paths));
    writeFileSync(paths.resolvConf, '');
    makeCgroupTree(cgroupRoot);

    const commands = new Map(componentCommands(options.nodeBinaries, paths, files).map((c) => [c.name, c]));
    const components = new Map<string, ServerProcess>();
    const startComponent = (name: string): ServerProcess => {
      const p = start(commands.get(name)!);
      components.set(name, p);
      return p;
    };

    say('starting containerd and importing the images');
    startComponent('containerd');
    await waitFor(() => existsSync(paths.containerdSocket), 60_000, 'containerd to listen');
    for (const image of options.images) {
      await run(options.nodeBinaries.ctr, ['--address', paths.containerdSocket, '--namespace', 'k8s.io', 'images', 'import', image], { maxBuffer: 16 << 20 });
    }

    say('starting the kubelet, kube-controller-manager, kube-scheduler, kube-proxy and CoreDNS');
    for (const name of ['kubelet', 'kube-controller-manager', 'kube-scheduler', 'kube-proxy', 'coredns']) startComponent(name);
    const admin = plane.kubeconfigFor('admin');
    await applyObjects(admin, bootstrapObjects());
    await waitForClusterReady(admin, started);
    say(`node ${NODE_NAME} is Ready`);

    let stopped = false;
    return {
      controlPlane: plane,
      components,
      sandboxPid: sb.pid,
      cgroupRoot,
      enter,
      restartComponent: async (name) => {
        const p = components.get(name);
        if (p === undefined) throw new Error(`no component ${name}: one of ${[...components.keys()].join(', ')}`);
        await p.stop(10_000);
        started.splice(started.indexOf(p), 1);
        startComponent(name);
      },
      stop: async (stopOptions) => {
        if (stopped) return;
        stopped = true;
        await stopAll();
        if (!stopOptions?.keepDir) rmSync(dir, { recursive: true, force: true });
      },
    };
  } catch (e) {
    await stopAll();
    throw e;
  }
}

async function waitForClusterReady(admin: KubeConfig, processes: readonly ServerProcess[]): Promise<void> {
  const died = (): string | undefined => {
    const dead = processes.find((p) => !p.running);
    return dead === undefined ? undefined : `${dead.name} exited; the end of its log:\n${dead.logTail()}`;
  };
  await waitFor(async () => (await nodeReady(admin, NODE_NAME)) || throwIf(died()), 120_000, `node ${NODE_NAME} to be Ready`);
  await waitFor(async () => (await namespaceReady(admin, 'default')) || throwIf(died()), 60_000, 'the default ServiceAccount and kube-root-ca.crt');
}

function throwIf(message: string | undefined): false {
  if (message !== undefined) throw new StopWaiting(message);
  return false;
}

/** The kubelet refuses a cgroupRoot missing from any hierarchy: make it in each (cgroup v1 has one per controller). */
function makeCgroupTree(cgroupRoot: string): void {
  const mount = '/sys/fs/cgroup';
  if (existsSync(`${mount}/cgroup.controllers`)) {
    mkdirSync(`${mount}${cgroupRoot}`, { recursive: true });
    return;
  }
  for (const h of readdirSync(mount, { withFileTypes: true })) if (h.isDirectory()) mkdirSync(`${mount}/${h.name}${cgroupRoot}`, { recursive: true });
}

function lastPemBlock(pem: string): string {
  const blocks = pem.match(/-----BEGIN CERTIFICATE-----[\s\S]+?-----END CERTIFICATE-----/g) ?? [];
  const last = blocks.at(-1);
  if (last === undefined) throw new Error('the apiserver wrote no certificate in its --cert-dir');
  return `${last}\n`;
}

function onPath(tool: string): boolean {
  return (process.env.PATH ?? '/usr/sbin:/usr/bin:/sbin:/bin').split(':').some((d) => d !== '' && existsSync(join(d, tool)));
}
