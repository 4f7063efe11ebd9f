import { execFile } from 'node:child_process';
import { existsSync, mkdirSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { ServerProcess } from '../process-group.js';
import type { NodeAddresses } from './addresses.js';
import { removeCgroupTree } from './cgroups.js';
import { type NodeBinaries, nodeCommands } from './components.js';
import { MAX_SOCKET_PATH, cniConfig, containerdConfig, kubeProxyConfig, kubeletConfig, nodePaths, socketPathTooLong } from './configs.js';
import { linkCommands } from './links.js';
import { type Sandbox, createSandbox } from './namespaces.js';
import { waitFor } from './readiness.js';

const run = promisify(execFile);

/** One node of a real cluster: its own network, mount and PID namespaces, containerd, kubelet and kube-proxy. */
export interface RealNode {
  /** As the kubelet registers it (`system:node:<name>` to the Node authorizer). */
  readonly name: string;
  /** Its name, address, pod range and the name of its link on the control plane's bridge. */
  readonly addresses: NodeAddresses;
  /** Host PID of the node's namespaces' first process (nested in the control plane's PID namespace). */
  readonly sandboxPid: number;
  /** The kubelet's cgroupRoot: `<the run's subtree>/<name>`. */
  readonly cgroupRoot: string;
  /**
   * The kubelet's root folder: a pod's volumes are under `pods/<uid>/volumes`. Read them inside
   * the node's namespaces ({@link RealNode.enter}): the kubelet mounts Secret and projected
   * volumes there as tmpfs, which the host's mount namespace does not see.
   */
  readonly kubeletRoot: string;
  /** False once the node is powered off (RealCluster.powerOff). */
  readonly running: boolean;
  /** The node's processes, by name: containerd, kubelet, kube-proxy. */
  readonly components: ReadonlyMap<string, ServerProcess>;
  /** How long its start took, in ms: the namespaces and links; containerd and the image import; the kubelet and kube-proxy started. */
  readonly startTimings: { readonly sandboxMs: number; readonly importMs: number; readonly componentsMs: number };
  /** `argv` prefixed to run inside the node's namespaces (where every pod and Service address is reached). */
  enter(argv: readonly string[]): string[];
  /** Stops one component and starts it again (the kubelet then forgets its pod-certificate state). */
  restartComponent(name: string): Promise<void>;
}

/** A node as its cluster holds it: with what stops it. */
export interface StartedNode extends RealNode {
  /** Every process it started on the host side (nsenter and watchdogs), for the cluster's stop. */
  readonly processes: readonly ServerProcess[];
  /** Kills everything in the node's namespaces at once (a power cut), then its cgroup subtree. Safe to call twice. */
  destroy(): Promise<void>;
}

/** What one node is started from. */
export interface NodeStart {
  /** The node's folder: its state, configuration and logs. */
  readonly dir: string;
  readonly node: NodeAddresses;
  /** Every node of the cluster (the routes to their pods). */
  readonly all: readonly NodeAddresses[];
  /** Host PID of the control plane's sandbox: the node's PID namespace nests in its, its veth peer joins its bridge. */
  readonly controlPlanePid: number;
  readonly binaries: NodeBinaries;
  /** Image archives imported into this node's containerd before the kubelet starts. */
  readonly images: readonly string[];
  /** A start after a power cut: what a reboot empties (/run, containerd's state folder) is emptied first. */
  readonly rebooted?: boolean;
  readonly cgroupRoot: string;
  readonly syncFrequency: string;
  /** Kubeconfigs against the control plane's address: the node's own user, and kube-proxy's. */
  readonly kubeletKubeconfig: string;
  readonly proxyKubeconfig: string;
  readonly progress: (line: string) => void;
}

/**
 * Starts one node: its namespaces nested in the control plane's, linked to the control plane's
 * bridge, containerd with the images imported, then the kubelet and kube-proxy. Resolves once
 * they run (Ready is the cluster's to wait for). On failure it destroys what it made and rejects.
 */
export async function startNode(start: NodeStart): Promise<StartedNode> {
  const { node, dir } = start;
  const say = (line: string): void => start.progress(`${node.name}: ${line}`);
  const paths = nodePaths(dir);
  const tooLong = socketPathTooLong(paths);
  if (tooLong !== undefined)
    throw new Error(
      `${node.name}'s folder ${dir} is too deep for the unix sockets made under it: ${tooLong.path} would be ${tooLong.bytes} bytes, and a socket's path may have at most ${MAX_SOCKET_PATH}; start the cluster in a shorter folder`,
    );
  const logs = join(dir, 'logs');
  // What a reboot's tmpfs /run would lose, the sockets of the killed containerd included: left in
  // place, they made the wait below pass before the new containerd listened, and the kubelet,
  // started too early, gave up on the runtime (the node never came back).
  if (start.rebooted) {
    for (const d of [join(dir, 'sandbox', 'overlay', 'run'), paths.containerdState, paths.containerdSocket, `${paths.containerdSocket}.ttrpc`])
      rmSync(d, { recursive: true, force: true });
  }
  for (const d of [paths.containerdRoot, paths.containerdState, paths.kubeletRoot, paths.podLogs, paths.cniConfDir, paths.cniDataDir, logs])
    mkdirSync(d, { recursive: true });
  const processes: ServerProcess[] = [];
  const components = new Map<string, ServerProcess>();
  let sandbox: Sandbox | undefined;
  let destroyed = false;
  const destroy = async (): Promise<void> => {
    if (destroyed) return;
    destroyed = true;
    try {
      // The link first, as a power cut takes it: a process killed inside closes its sockets, and
      // with the link still up their resets reached the peers, which a lost node never sends.
      if (sandbox !== undefined)
        await run('nsenter', [`--target=${start.controlPlanePid}`, '--net', '--', 'ip', 'link', 'del', node.peerLink]).catch(() => undefined);
      await sandbox?.destroy();
    } finally {
      for (const p of processes) await p.stop(1000);
      await waitFor(() => removeCgroupTree(start.cgroupRoot).length === 0, 10_000, `the cgroup subtree ${start.cgroupRoot} to be removable`).catch(
        () => undefined,
      );
    }
  };

  try {
    const began = Date.now();
    const sb = await createSandbox({ root: join(dir, 'sandbox'), role: 'node', label: `node ${node.name}'s`, parentPid: start.controlPlanePid });
    sandbox = sb;
    for (const c of linkCommands(node, start.all, start.controlPlanePid)) {
      await run('nsenter', [`--target=${c.in === 'node' ? sb.pid : start.controlPlanePid}`, '--net', '--', 'ip', ...c.ip]);
    }
    const sandboxMs = Date.now() - began;
    const binDir = start.binaries.dir;
    const enter = (argv: readonly string[]): string[] =>
      sb.enter(['env', `PATH=${binDir}:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin`, ...argv]);
    const file = (name: string, content: string): string => {
      const f = join(dir, name);
      writeFileSync(f, content);
      return f;
    };
    const files = {
      containerdConfig: file('containerd.toml', containerdConfig(paths, start.binaries.runc, start.binaries.cniBinDir)),
      kubeletConfig: file('kubelet.json', kubeletConfig(paths, { node, cgroupRoot: start.cgroupRoot, syncFrequency: start.syncFrequency })),
      kubeProxyConfig: file('kube-proxy.json', kubeProxyConfig(start.proxyKubeconfig, node)),
      kubeletKubeconfig: start.kubeletKubeconfig,
    };
    writeFileSync(join(paths.cniConfDir, '10-eso-mtls.conflist'), cniConfig(paths, node));
    writeFileSync(paths.resolvConf, '');
    makeCgroupTree(start.cgroupRoot);

    const commands = new Map(nodeCommands(start.binaries, paths, node, files).map((c) => [c.name, c]));
    const startComponent = (name: string): ServerProcess => {
      const c = commands.get(name)!;
      const p = ServerProcess.start(c.name, c.argv[0]!, c.argv.slice(1), join(logs, `${c.name}.log`), enter);
      processes.push(p);
      components.set(name, p);
      return p;
    };

    say('starting containerd and importing the images');
    const importing = Date.now();
    startComponent('containerd');
    // Answering, not just a socket file: the kubelet gives up on a runtime that does not answer at its start.
    const answers = (): Promise<boolean> =>
      run(start.binaries.ctr, ['--address', paths.containerdSocket, 'version']).then(
        () => true,
        () => false,
      );
    await waitFor(async () => existsSync(paths.containerdSocket) && (await answers()), 60_000, `containerd of ${node.name} to listen`);
    for (const image of start.images) {
      await run(start.binaries.ctr, ['--address', paths.containerdSocket, '--namespace', 'k8s.io', 'images', 'import', image], { maxBuffer: 16 << 20 });
    }
    const importMs = Date.now() - importing;
    say(`${start.images.length} images imported in ${(importMs / 1000).toFixed(1)} s; starting the kubelet and kube-proxy`);
    const starting = Date.now();
    for (const name of ['kubelet', 'kube-proxy']) startComponent(name);
    const componentsMs = Date.now() - starting;

    return {
      name: node.name,
      addresses: node,
      sandboxPid: sb.pid,
      running: true,
      cgroupRoot: start.cgroupRoot,
      kubeletRoot: paths.kubeletRoot,
      components,
      startTimings: { sandboxMs, importMs, componentsMs },
      processes,
      enter,
      restartComponent: async (name) => {
        const p = components.get(name);
        if (p === undefined) throw new Error(`node ${node.name} has no component ${name}: one of ${[...components.keys()].join(', ')}`);
        await p.stop(10_000);
        processes.splice(processes.indexOf(p), 1);
        startComponent(name);
      },
      destroy,
    };
  } catch (e) {
    await destroy();
    throw e;
  }
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
