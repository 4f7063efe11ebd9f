import { join } from 'node:path';
import { type BuildScriptProduct, executable, runBuildScript } from '../binaries.js';
import { CLUSTER_NETWORK, type NodeAddresses } from './addresses.js';
import { type NodePaths, kubeletArgs } from './configs.js';

/** The node's executables: the cached build of testing/node/build-node-bins.sh, plus Debian's runc and CNI plugins. */
export interface NodeBinaries {
  readonly dir: string;
  readonly kubelet: string;
  readonly kubeControllerManager: string;
  readonly kubeScheduler: string;
  readonly kubeProxy: string;
  readonly containerd: string;
  readonly ctr: string;
  readonly coredns: string;
  readonly runc: string;
  readonly cniBinDir: string;
}

/** Debian's runc and CNI plugins (packages runc and containernetworking-plugins). */
const DEBIAN_RUNC = '/usr/sbin/runc';
const DEBIAN_CNI = '/usr/lib/cni';

/**
 * Runs a clone's testing/node/build-node-bins.sh (cached; the first build takes 15-30 minutes on 2
 * cores) and returns the node's binaries.
 */
export function locateNodeBinaries(buildScript: string, progress: (line: string) => void, env: NodeJS.ProcessEnv = process.env): Promise<NodeBinaries> {
  return runBuildScript(buildScript, progress, NODE_BUILD, env);
}

const NODE_BUILD: BuildScriptProduct<NodeBinaries> = {
  provides: `the node's binaries (kubelet, kube-controller-manager, kube-scheduler, kube-proxy, containerd, CoreDNS) and Debian's runc and CNI plugins`,
  found: (dir) => {
    const bins = nodeBinariesIn(dir);
    return typeof bins === 'string' ? undefined : bins;
  },
  otherwise: 'set ESO_MTLS_NODE_BINS to a folder holding them (and apt-get install runc containernetworking-plugins)',
};

/** The node's binaries in `dir` (testing/node/build-node-bins.sh's folder), or the first one missing. */
export function nodeBinariesIn(dir: string): NodeBinaries | string {
  const bins: NodeBinaries = {
    dir,
    kubelet: join(dir, 'kubelet'),
    kubeControllerManager: join(dir, 'kube-controller-manager'),
    kubeScheduler: join(dir, 'kube-scheduler'),
    kubeProxy: join(dir, 'kube-proxy'),
    containerd: join(dir, 'containerd'),
    ctr: join(dir, 'ctr'),
    coredns: join(dir, 'coredns'),
    runc: DEBIAN_RUNC,
    cniBinDir: DEBIAN_CNI,
  };
  const missing = [
    bins.kubelet,
    bins.kubeControllerManager,
    bins.kubeScheduler,
    bins.kubeProxy,
    bins.containerd,
    bins.ctr,
    join(dir, 'containerd-shim-runc-v2'),
    bins.coredns,
    bins.runc,
    join(bins.cniBinDir, 'bridge'),
  ].find((f) => !executable(f));
  return missing ?? bins;
}

/** One process of the node: its name (also its log's), and its command line. */
export interface ComponentCommand {
  readonly name: string;
  readonly argv: readonly string[];
}

/** The files the control plane's components read, written by the caller before it starts them. */
export interface ControlPlaneFiles {
  readonly corefile: string;
  /** Kubeconfigs against the apiserver's address inside the control plane's namespace. */
  readonly kubeconfigs: {
    readonly controllerManager: string;
    readonly scheduler: string;
    readonly coredns: string;
  };
  /** The apiserver's serving CA, which kube-controller-manager publishes as `kube-root-ca.crt`. */
  readonly apiServerCa: string;
  /** The key that signs ServiceAccount tokens (the apiserver's --service-account-signing-key-file). */
  readonly serviceAccountKey: string;
}

/**
 * The control plane's processes beside etcd and kube-apiserver, in its own namespaces:
 * kube-controller-manager with its default controllers (the node lifecycle controller among
 * them, with its default timings), kube-scheduler, and CoreDNS.
 */
export function controlPlaneCommands(bins: NodeBinaries, files: ControlPlaneFiles): ComponentCommand[] {
  const k = files.kubeconfigs;
  return [
    {
      name: 'kube-controller-manager',
      argv: [
        bins.kubeControllerManager,
        `--kubeconfig=${k.controllerManager}`,
        '--leader-elect=false',
        '--use-service-account-credentials=true',
        `--service-account-private-key-file=${files.serviceAccountKey}`,
        `--root-ca-file=${files.apiServerCa}`,
        `--service-cluster-ip-range=${CLUSTER_NETWORK.serviceCidr}`,
        '--bind-address=127.0.0.1',
        '--secure-port=10257',
      ],
    },
    {
      name: 'kube-scheduler',
      argv: [bins.kubeScheduler, `--kubeconfig=${k.scheduler}`, '--leader-elect=false', '--bind-address=127.0.0.1', '--secure-port=10259'],
    },
    { name: 'coredns', argv: [bins.coredns, '-conf', files.corefile] },
  ];
}

/** The files one node's components read, written by the caller before it starts them. */
export interface NodeFiles {
  readonly containerdConfig: string;
  readonly kubeletConfig: string;
  readonly kubeProxyConfig: string;
  /** The node's kubeconfig (user `system:node:<name>`), against the control plane's address. */
  readonly kubeletKubeconfig: string;
}

/** One node's processes, in start order: the runtime, the kubelet, the network. */
export function nodeCommands(bins: NodeBinaries, paths: NodePaths, node: NodeAddresses, files: NodeFiles): ComponentCommand[] {
  return [
    { name: 'containerd', argv: [bins.containerd, `--config=${files.containerdConfig}`] },
    { name: 'kubelet', argv: [bins.kubelet, ...kubeletArgs(paths, node, files.kubeletConfig, files.kubeletKubeconfig)] },
    { name: 'kube-proxy', argv: [bins.kubeProxy, `--config=${files.kubeProxyConfig}`] },
  ];
}
