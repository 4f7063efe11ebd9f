import { CLUSTER_NETWORK, type NodeAddresses } from './addresses.js';

/** Where a node keeps its state: every path lies under the run's own folder. */
export interface NodePaths {
  /** The run's folder (a temporary one in tests). */
  readonly root: string;
  readonly containerdRoot: string;
  readonly containerdState: string;
  readonly containerdSocket: string;
  readonly kubeletRoot: string;
  readonly podLogs: string;
  readonly cniConfDir: string;
  readonly cniDataDir: string;
  /** An empty resolv.conf: pods get cluster DNS and nothing upstream. */
  readonly resolvConf: string;
}

/** The node's paths under `root`. */
export function nodePaths(root: string): NodePaths {
  return {
    root,
    containerdRoot: `${root}/containerd/root`,
    containerdState: `${root}/containerd/state`,
    // Beside the state, not in it: a unix socket's path is bounded (MAX_SOCKET_PATH), and the run's
    // folder may already be deep.
    containerdSocket: `${root}/containerd.sock`,
    kubeletRoot: `${root}/kubelet`,
    podLogs: `${root}/pod-logs`,
    cniConfDir: `${root}/cni/net.d`,
    cniDataDir: `${root}/cni/data`,
    resolvConf: `${root}/resolv.conf`,
  };
}

/** The longest path a unix socket may have: 108 bytes with the terminating NUL (Linux's sun_path). */
export const MAX_SOCKET_PATH = 107;

/**
 * The unix sockets made under a node's folder (containerd's and its ttrpc one; the kubelet's device
 * plugin and pod resources sockets), and the first whose path is over {@link MAX_SOCKET_PATH}
 * bytes: a folder that deep makes containerd or the kubelet fail to listen, so it is refused first.
 */
export function socketPathTooLong(paths: NodePaths): { readonly path: string; readonly bytes: number } | undefined {
  const sockets = [`${paths.containerdSocket}.ttrpc`, `${paths.kubeletRoot}/device-plugins/kubelet.sock`, `${paths.kubeletRoot}/pod-resources/kubelet.sock`];
  const path = sockets.find((p) => Buffer.byteLength(p) > MAX_SOCKET_PATH);
  return path === undefined ? undefined : { path, bytes: Buffer.byteLength(path) };
}

/** The image the CRI runs as each pod's sandbox; it is imported, never pulled. */
export const SANDBOX_IMAGE = 'registry.k8s.io/pause:3.10.2';

/**
 * containerd v2's configuration (version 3): state under the run's folder, runc with cgroupfs,
 * the sandbox image pinned to the imported one, CNI from Debian's plugins, NRI off, and
 * `restrict_oom_score_adj` (a VM may refuse to lower oom_score_adj; runc then fails with only
 * "can't get final child's PID from pipe: EOF").
 */
export function containerdConfig(paths: NodePaths, runc: string, cniBinDir: string): string {
  return `version = 3
root = ${toml(paths.containerdRoot)}
state = ${toml(paths.containerdState)}

[grpc]
  address = ${toml(paths.containerdSocket)}

[plugins.'io.containerd.nri.v1.nri']
  disable = true

[plugins.'io.containerd.cri.v1.images']
  snapshotter = 'overlayfs'
  [plugins.'io.containerd.cri.v1.images'.pinned_images]
    sandbox = ${toml(SANDBOX_IMAGE)}

[plugins.'io.containerd.cri.v1.runtime']
  restrict_oom_score_adj = true
  [plugins.'io.containerd.cri.v1.runtime'.containerd]
    default_runtime_name = 'runc'
    [plugins.'io.containerd.cri.v1.runtime'.containerd.runtimes.runc]
      runtime_type = 'io.containerd.runc.v2'
      [plugins.'io.containerd.cri.v1.runtime'.containerd.runtimes.runc.options]
        BinaryName = ${toml(runc)}
        SystemdCgroup = false
  [plugins.'io.containerd.cri.v1.runtime'.cni]
    bin_dirs = [${toml(cniBinDir)}]
    conf_dir = ${toml(paths.cniConfDir)}

[plugins.'io.containerd.grpc.v1.cri']
  disable_tcp_service = true
  stream_server_address = '127.0.0.1'
  stream_server_port = '0'
`;
}

/**
 * A node's pod network: one bridge, host-local addresses from the node's own range, masquerade out
 * of that range (inside the node's namespace; a pod on another node sees this node's address).
 */
export function cniConfig(paths: NodePaths, node: NodeAddresses): string {
  return JSON.stringify(
    {
      cniVersion: '1.0.0',
      name: 'eso-mtls',
      plugins: [
        {
          type: 'bridge',
          bridge: 'cni0',
          isGateway: true,
          ipMasq: true,
          hairpinMode: true,
          ipam: {
            type: 'host-local',
            dataDir: paths.cniDataDir,
            ranges: [[{ subnet: node.podCidr, gateway: node.podGateway }]],
            routes: [{ dst: '0.0.0.0/0' }],
          },
        },
        { type: 'portmap', capabilities: { portMappings: true } },
      ],
    },
    null,
    2,
  );
}

/** What the kubelet's configuration depends on besides the paths. */
export interface KubeletSettings {
  /** The node it runs: its address is where the kubelet API listens. */
  readonly node: NodeAddresses;
  /** A cgroup subtree of this run's own (e.g. `/eso-mtls-<id>/<node>`); never `kubepods` at the top. */
  readonly cgroupRoot: string;
  /** How often the kubelet resyncs pods and their volumes (production default 1m; tests go lower). */
  readonly syncFrequency: string;
}

/**
 * The kubelet's KubeletConfiguration. The kubelet API listens only on the node's address inside
 * the harness's namespaces; it serves the apiserver (logs, exec, the pod proxy) without authentication, which is
 * acceptable only because nothing outside the harness's namespace can reach it. Eviction by disk
 * is off: the node shares the host's disk, and evicting test pods for the host's usage would make
 * the suite depend on it.
 */
export function kubeletConfig(paths: NodePaths, settings: KubeletSettings): string {
  return JSON.stringify(
    {
      apiVersion: 'kubelet.config.k8s.io/v1beta1',
      kind: 'KubeletConfiguration',
      cgroupDriver: 'cgroupfs',
      cgroupRoot: settings.cgroupRoot,
      failCgroupV1: false,
      failSwapOn: false,
      containerRuntimeEndpoint: `unix://${paths.containerdSocket}`,
      address: settings.node.ip,
      port: 10250,
      readOnlyPort: 0,
      healthzBindAddress: '127.0.0.1',
      healthzPort: 10248,
      authentication: { anonymous: { enabled: true }, webhook: { enabled: false } },
      authorization: { mode: 'AlwaysAllow' },
      clusterDNS: [CLUSTER_NETWORK.dnsServiceIp],
      clusterDomain: CLUSTER_NETWORK.clusterDomain,
      resolvConf: paths.resolvConf,
      podLogsDir: paths.podLogs,
      syncFrequency: settings.syncFrequency,
      evictionHard: { 'memory.available': '100Mi', 'nodefs.available': '0%', 'imagefs.available': '0%', 'nodefs.inodesFree': '0%' },
      imageGCHighThresholdPercent: 100,
      imageGCLowThresholdPercent: 99,
      serializeImagePulls: false,
      protectKernelDefaults: false,
      makeIPTablesUtilChains: false,
      registerNode: true,
    },
    null,
    2,
  );
}

/** The kubelet's flags beside its configuration file. */
export function kubeletArgs(paths: NodePaths, node: NodeAddresses, configFile: string, kubeconfig: string): string[] {
  return [
    `--config=${configFile}`,
    `--kubeconfig=${kubeconfig}`,
    `--root-dir=${paths.kubeletRoot}`,
    `--cert-dir=${paths.kubeletRoot}/pki`,
    `--hostname-override=${node.name}`,
    `--node-ip=${node.ip}`,
    '--v=1',
  ];
}

/**
 * kube-proxy in iptables mode, inside a node's namespace. `conntrack.maxPerCore: 0` leaves the
 * host-wide conntrack table size alone (kube-proxy would otherwise raise nf_conntrack_max). Its
 * clusterCIDR is every node's pods, so traffic from a pod on another node is told from outside traffic.
 */
export function kubeProxyConfig(kubeconfig: string, node: NodeAddresses): string {
  return JSON.stringify(
    {
      apiVersion: 'kubeproxy.config.k8s.io/v1alpha1',
      kind: 'KubeProxyConfiguration',
      mode: 'iptables',
      clientConnection: { kubeconfig },
      hostnameOverride: node.name,
      bindAddress: node.ip,
      clusterCIDR: CLUSTER_NETWORK.clusterPodCidr,
      healthzBindAddress: '127.0.0.1:10256',
      metricsBindAddress: '127.0.0.1:10249',
      conntrack: { maxPerCore: 0, min: 0, tcpEstablishedTimeout: '0s', tcpCloseWaitTimeout: '0s' },
    },
    null,
    2,
  );
}

/**
 * CoreDNS, in the control plane's namespace on the address every node routes to: the cluster's
 * names from the apiserver, and nothing else. There is no `forward`: a name outside the cluster
 * gets SERVFAIL/NXDOMAIN at once instead of a query leaving the namespace.
 */
export function corefile(kubeconfig: string): string {
  return `.:53 {
    bind ${CLUSTER_NETWORK.controlPlaneIp}
    errors
    health 127.0.0.1:8081
    ready 127.0.0.1:8181
    kubernetes ${CLUSTER_NETWORK.clusterDomain} in-addr.arpa ip6.arpa {
        kubeconfig ${kubeconfig}
        pods insecure
        fallthrough in-addr.arpa ip6.arpa
        ttl 5
    }
    cache 5
    loop
}
`;
}

// A TOML basic string: JSON's escaping is a subset TOML accepts.
function toml(value: string): string {
  return JSON.stringify(value);
}
