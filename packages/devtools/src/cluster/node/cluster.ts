import { execFile } from 'node:child_process';
import { existsSync, mkdirSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { promisify } from 'node:util';
import type { KubeConfig } from '@kubernetes/client-node';
import type { ControlPlaneBinaries } from '../binaries.js';
import { type LaunchedControlPlane, launchControlPlane } from '../control-plane.js';
import { type IdentitySpec, KUBE_CONTROLLER_MANAGER, KUBE_PROXY, KUBE_SCHEDULER, nodeIdentity } from '../identities.js';
import { freePort } from '../ports.js';
import { ServerProcess } from '../process-group.js';
import { CLUSTER_NETWORK, type NodeAddresses, clusterNodes } from './addresses.js';
import { COREDNS_USER, bootstrapObjects } from './bootstrap.js';
import { cgroupSupport, detectCgroupHost, removeCgroupTree, runCgroupRoot } from './cgroups.js';
import { type ComponentCommand, type NodeBinaries, controlPlaneCommands } from './components.js';
import { corefile } from './configs.js';
import { forwarderArgs } from './forwarder.js';
import { type Sandbox, createSandbox } from './namespaces.js';
import { StopWaiting, applyObjects, namespaceReady, nodeReady, waitFor } from './readiness.js';
import { type RealNode, type StartedNode, startNode } from './real-node.js';

const run = promisify(execFile);

/** What a real cluster is started from. */
export interface RealClusterOptions {
  /** The run's folder: every file and all state of the cluster live under it. Made if missing. */
  readonly dir: string;
  /** A name for this run: it names the cgroup subtree (`/eso-mtls-<runId>`). */
  readonly runId: string;
  readonly controlPlaneBinaries: ControlPlaneBinaries;
  readonly nodeBinaries: NodeBinaries;
  /** Image archives (docker-archive or OCI) imported into every node's containerd before its kubelet starts: nothing is ever pulled. */
  readonly images: readonly string[];
  /** How many nodes (default 1; at most `MAX_NODES`, 8), each in namespaces of its own. */
  readonly nodes?: number;
  /** The kubelet's syncFrequency (default 1m, as in production; tests may go lower). */
  readonly syncFrequency?: string;
  /** Extra kube-apiserver flags (an audit log, say). */
  readonly apiServerFlags?: readonly string[];
  /** Users besides the cluster's own components, each with a static token. */
  readonly identities?: readonly IdentitySpec[];
  /** Progress lines for a terminal or a test log. */
  readonly progress?: (line: string) => void;
}

/** A control plane in namespaces of its own, and real nodes, each in namespaces of its own. */
export interface RealCluster {
  readonly controlPlane: LaunchedControlPlane;
  /** The nodes, the first (`eso-mtls-node`) first. */
  readonly nodes: readonly RealNode[];
  /**
   * The control plane's processes beside etcd and kube-apiserver (kube-controller-manager,
   * kube-scheduler, coredns) and the first node's (containerd, kubelet, kube-proxy), by name.
   */
  readonly components: ReadonlyMap<string, ServerProcess>;
  /** Host PID of the control plane's namespaces' first process; every node's PID namespace is nested in its. */
  readonly sandboxPid: number;
  /** The run's cgroup subtree (each node's kubelet has `<it>/<node name>`), removed by stop(). */
  readonly cgroupRoot: string;
  /** `argv` prefixed to run inside the first node's namespaces (tests reach pods and Services from there). */
  enter(argv: readonly string[]): string[];
  /** Stops a control plane component or the first node's and starts it again (the kubelet then forgets its pod-certificate state). */
  restartComponent(name: string): Promise<void>;
  /**
   * Cuts one node's link, then kills every process of it at once, its kubelet, containerd,
   * kube-proxy and every pod, as a power cut would (no reset or FIN reaches a peer), and removes its
   * cgroup subtree; the control plane and the other nodes run on. The node stays in {@link RealCluster.nodes}, with `running` false.
   */
  powerOff(name: string): Promise<void>;
  /**
   * Starts a powered-off node again from its folder, as a reboot would: its kubelet's and
   * containerd's state (the images among it) kept, its /run emptied. Resolves once its components
   * run; Ready is the caller's to wait for.
   */
  powerOn(name: string): Promise<RealNode>;
  /** Every process of the cluster on the host side: etcd, kube-apiserver, and every component of the control plane and the nodes. */
  processes(): readonly ServerProcess[];
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

const CONTROL_PLANE_USERS: readonly IdentitySpec[] = [KUBE_CONTROLLER_MANAGER, KUBE_SCHEDULER, KUBE_PROXY, { name: COREDNS_USER }];

/**
 * Starts etcd, kube-apiserver, kube-controller-manager, kube-scheduler and CoreDNS inside fresh
 * mount, network and PID namespaces, then each node (containerd with the images imported, the
 * kubelet, kube-proxy) in namespaces of its own nested in those, linked through a bridge in the
 * control plane's network namespace. Resolves once every node is Ready with kube-proxy's rules written, the default
 * ServiceAccount and `kube-root-ca.crt` exist and cluster DNS answers. On any failure everything
 * started so far is stopped before it rejects.
 */
export async function startRealCluster(options: RealClusterOptions): Promise<RealCluster> {
  const unavailable = realNodeUnavailable();
  if (unavailable !== undefined) throw new Error(`cannot run a real node here: ${unavailable}`);
  const nodeAddresses = clusterNodes(options.nodes ?? 1);
  const say = options.progress ?? (() => undefined);
  const dir = options.dir;
  mkdirSync(dir, { recursive: true, mode: 0o700 });
  for (const d of [join(dir, 'control-plane'), join(dir, 'logs')]) mkdirSync(d, { recursive: true });
  const cgroupRoot = runCgroupRoot(options.runId);
  const started: ServerProcess[] = [];
  const nodes: StartedNode[] = [];
  const poweredOff: StartedNode[] = [];
  let sandbox: Sandbox | undefined;
  let controlPlane: LaunchedControlPlane | undefined;

  // Nothing inside needs a graceful stop: killing the control plane's PID 1 kills every process in
  // its PID namespace and in the nodes' nested in it at once, after which each watchdog and
  // nsenter on the host exits by itself. A namespace slow to empty is reported, after the rest is
  // stopped all the same.
  const stopAll = async (): Promise<void> => {
    try {
      await sandbox?.destroy();
    } finally {
      for (const n of [...nodes, ...poweredOff]) await n.destroy().catch(() => undefined);
      for (const p of started) await p.stop(1000);
      await controlPlane?.stop();
      await waitFor(() => removeCgroupTree(cgroupRoot).length === 0, 10_000, `the cgroup subtree ${cgroupRoot} to be removable`).catch(() => undefined);
    }
  };

  try {
    say(`creating the control plane's network, mount and PID namespaces${nodeAddresses.length > 1 ? ` and ${nodeAddresses.length} nodes'` : ''}`);
    const sb = await createSandbox({ root: join(dir, 'sandbox'), role: 'control-plane', label: "the control plane's" });
    sandbox = sb;
    const binDir = options.nodeBinaries.dir;
    const enterControlPlane = (argv: readonly string[]): string[] =>
      sb.enter(['env', `PATH=${binDir}:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin`, ...argv]);
    const start = (c: ComponentCommand): ServerProcess => {
      const p = ServerProcess.start(c.name, c.argv[0]!, c.argv.slice(1), join(dir, 'logs', `${c.name}.log`), enterControlPlane);
      started.push(p);
      return p;
    };

    // The host reaches the apiserver through a unix socket: nothing of the host's network enters the namespace.
    const socket = join(dir, 'apiserver.sock');
    start({ name: 'apiserver-forwarder', argv: [process.execPath, ...forwarderArgs(`unix:${socket}`, `tcp:127.0.0.1:${CLUSTER_NETWORK.apiServerPort}`)] });
    await waitFor(() => existsSync(socket), 30_000, "the apiserver forwarder inside the control plane's namespace");
    const hostPort = await freePort();
    const hostForwarder = ServerProcess.start(
      'apiserver-forwarder-host',
      process.execPath,
      forwarderArgs(`tcp:127.0.0.1:${hostPort}`, `unix:${socket}`),
      join(dir, 'logs', 'apiserver-forwarder-host.log'),
    );
    started.push(hostForwarder);
    await waitFor(() => hostForwarder.logTail().includes('listening'), 30_000, 'the apiserver forwarder on the host');

    say("starting etcd and kube-apiserver inside the control plane's namespaces");
    controlPlane = await launchControlPlane({
      binaries: options.controlPlaneBinaries,
      dir: join(dir, 'control-plane'),
      identities: [...nodeAddresses.map((n) => nodeIdentity(n.name)), ...CONTROL_PLANE_USERS, ...(options.identities ?? [])],
      nodeAuthorization: true,
      // The kubelet by the address it registered, never by its name (nothing inside resolves it).
      apiServerFlags: ['--kubelet-preferred-address-types=InternalIP', ...(options.apiServerFlags ?? [])],
      wrap: enterControlPlane,
      bindAddress: '0.0.0.0',
      advertiseAddress: CLUSTER_NETWORK.controlPlaneIp,
      securePort: CLUSTER_NETWORK.apiServerPort,
      serviceClusterIpRange: CLUSTER_NETWORK.serviceCidr,
      clientUrl: `https://127.0.0.1:${hostPort}`,
      clientTlsServerName: 'kubernetes.default.svc',
    });
    const plane = controlPlane;

    const kubeconfigFile = (user: string): string => {
      const file = join(dir, `kubeconfig-${user.replace(/[^A-Za-z0-9._-]/g, '_')}.json`);
      writeFileSync(file, plane.kubeconfigFor(user, { advertised: true }).exportConfig(), { mode: 0o600 });
      return file;
    };
    const file = (name: string, content: string): string => {
      const f = join(dir, name);
      writeFileSync(f, content);
      return f;
    };
    const corednsKubeconfig = kubeconfigFile(COREDNS_USER);
    const controlPlaneFiles = {
      corefile: file('Corefile', corefile(corednsKubeconfig)),
      kubeconfigs: {
        controllerManager: kubeconfigFile(KUBE_CONTROLLER_MANAGER.name),
        scheduler: kubeconfigFile(KUBE_SCHEDULER.name),
        coredns: corednsKubeconfig,
      },
      // kube-controller-manager publishes this as kube-root-ca.crt and as a ClusterTrustBundle, which must hold only CAs.
      apiServerCa: file('apiserver-ca.crt', lastPemBlock(plane.caPem)),
      serviceAccountKey: plane.serviceAccountKeyFile,
    };
    const components = new Map<string, ServerProcess>();
    const controlPlaneComponents = new Map(controlPlaneCommands(options.nodeBinaries, controlPlaneFiles).map((c) => [c.name, c]));
    const startControlPlaneComponent = (name: string): ServerProcess => {
      const p = start(controlPlaneComponents.get(name)!);
      components.set(name, p);
      return p;
    };
    say('starting kube-controller-manager, kube-scheduler and CoreDNS');
    for (const name of controlPlaneComponents.keys()) startControlPlaneComponent(name);
    const admin = plane.kubeconfigFor('admin');
    await applyObjects(admin, bootstrapObjects());

    // The nodes start side by side: each imports the images into its own containerd.
    const proxyKubeconfig = kubeconfigFile(KUBE_PROXY.name);
    const nodeStart = (node: NodeAddresses, rebooted: boolean): Promise<StartedNode> =>
      startNode({
        // Short: the node's unix sockets live under it (configs.ts, socketPathTooLong).
        dir: join(dir, node.name),
        node,
        all: nodeAddresses,
        controlPlanePid: sb.pid,
        binaries: options.nodeBinaries,
        // A rebooted node keeps the images its containerd unpacked.
        images: rebooted ? [] : options.images,
        rebooted,
        cgroupRoot: `${cgroupRoot}/${node.name}`,
        syncFrequency: options.syncFrequency ?? '1m',
        kubeletKubeconfig: kubeconfigFile(`system:node:${node.name}`),
        proxyKubeconfig,
        progress: say,
      });
    const results = await Promise.allSettled(
      nodeAddresses.map(async (node) => {
        const n = await nodeStart(node, false);
        nodes.push(n);
        return n;
      }),
    );
    const failed = results.find((r) => r.status === 'rejected');
    if (failed !== undefined) throw (failed as PromiseRejectedResult).reason;
    nodes.sort((a, b) => a.addresses.index - b.addresses.index);
    const first = (): StartedNode => nodes[0]!;
    for (const [name, p] of first().components) components.set(name, p);
    const nodeNamed = (name: string): StartedNode => {
      const n = nodes.find((x) => x.name === name);
      if (n === undefined) throw new Error(`no node ${name} is running: the nodes are ${nodes.map((x) => x.name).join(', ')}`);
      return n;
    };
    await waitForClusterReady(admin, nodes, () => [...started, ...nodes.flatMap((n) => n.processes)]);
    say(`${nodes.length === 1 ? `node ${first().name} is` : `nodes ${nodes.map((n) => n.name).join(', ')} are`} Ready`);

    let stopped = false;
    return {
      controlPlane: plane,
      nodes,
      components,
      sandboxPid: sb.pid,
      cgroupRoot,
      enter: (argv) => first().enter(argv),
      processes: () => [...plane.processes(), ...started.filter((p) => !p.name.startsWith('apiserver-forwarder')), ...nodes.flatMap((n) => n.processes)],
      restartComponent: async (name) => {
        if (first().components.has(name)) return first().restartComponent(name);
        const p = components.get(name);
        if (p === undefined) throw new Error(`no component ${name}: one of ${[...components.keys()].join(', ')}`);
        await p.stop(10_000);
        started.splice(started.indexOf(p), 1);
        startControlPlaneComponent(name);
      },
      powerOff: async (name) => {
        const n = nodeNamed(name);
        await n.destroy();
        nodes.splice(nodes.indexOf(n), 1, { ...n, running: false } as StartedNode);
        poweredOff.push(n);
      },
      powerOn: async (name) => {
        const index = nodes.findIndex((x) => x.name === name);
        const off = poweredOff.find((x) => x.name === name);
        if (off === undefined) throw new Error(`node ${name} is not powered off: powerOff(${JSON.stringify(name)}) first`);
        const n = await nodeStart(off.addresses, true);
        poweredOff.splice(poweredOff.indexOf(off), 1);
        nodes.splice(index, 1, n);
        if (index === 0) for (const [c, p] of n.components) components.set(c, p);
        return n;
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

async function waitForClusterReady(admin: KubeConfig, nodes: readonly RealNode[], processes: () => readonly ServerProcess[]): Promise<void> {
  const died = (): string | undefined => {
    const dead = processes().find((p) => !p.running);
    return dead === undefined ? undefined : `${dead.name} exited; the end of its log (${dead.logPath}):\n${dead.logTail()}`;
  };
  for (const node of nodes) {
    await waitFor(async () => (await nodeReady(admin, node.name)) || throwIf(died()), 120_000, `node ${node.name} to be Ready`);
    // Ready says nothing of kube-proxy: a pod's first ClusterIP call fails until its first sync has written the rules.
    await waitFor(async () => (await proxyRulesWritten(node)) || throwIf(died()), 120_000, `kube-proxy of ${node.name} to write its rules`);
  }
  await waitFor(async () => (await namespaceReady(admin, 'default')) || throwIf(died()), 60_000, 'the default ServiceAccount and kube-root-ca.crt');
}

/** True once kube-proxy's first sync has made the KUBE-SERVICES chain in the node's nat table. */
async function proxyRulesWritten(node: RealNode): Promise<boolean> {
  const [command, ...args] = node.enter(['iptables', '-t', 'nat', '-S', 'KUBE-SERVICES']);
  return run(command!, args).then(
    () => true,
    () => false,
  );
}

function throwIf(message: string | undefined): false {
  if (message !== undefined) throw new StopWaiting(message);
  return false;
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
