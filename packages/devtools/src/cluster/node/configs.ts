import { NODE_NAME, NODE_NETWORK } from './addresses.js';

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
    containerdSocket: `${root}/containerd/state/containerd.sock`,
    kubeletRoot: `${root}/kubelet`,
    podLogs: `${root}/pod-logs`,
    cniConfDir: `${root}/cni/net.d`,
    cniDataDir: `${root}/cni/data`,
    resolvConf: `${root}/resolv.conf`,
  };
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

/** The pod network: one bridge, host-local addresses, masquerade out of the pod range (inside the namespace). */
export function cniConfig(paths: NodePaths): string {
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
            ranges: [[{ subnet: NODE_NETWORK.podCidr, gateway: NODE_NETWORK.podGateway }]],
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
  /** A cgroup subtree of this run's own (e.g. `/eso-mtls-<id>`); never `kubepods` at the top. */
  readonly cgroupRoot: string;
  /** How often the kubelet resyncs pods and their volumes (production default 1m; tests go lower). */
  readonly syncFrequency: string;
}

/**
 * The kubelet's KubeletConfiguration. The kubelet API listens only on the node address inside the
 * namespace; it serves the apiserver (logs, exec, the pod proxy) without authentication, which is
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
      address: NODE_NETWORK.nodeIp,
      port: 10250,
      readOnlyPort: 0,
      healthzBindAddress: '127.0.0.1',
      healthzPort: 10248,
      authentication: { anonymous: { enabled: true }, webhook: { enabled: false } },
      authorization: { mode: 'AlwaysAllow' },
      clusterDNS: [NODE_NETWORK.dnsServiceIp],
      clusterDomain: NODE_NETWORK.clusterDomain,
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
export function kubeletArgs(paths: NodePaths, configFile: string, kubeconfig: string): string[] {
  return [
    `--config=${configFile}`,
    `--kubeconfig=${kubeconfig}`,
    `--root-dir=${paths.kubeletRoot}`,
    `--cert-dir=${paths.kubeletRoot}/pki`,
    `--hostname-override=${NODE_NAME}`,
    `--node-ip=${NODE_NETWORK.nodeIp}`,
    '--v=1',
  ];
}

/**
 * kube-proxy in iptables mode, inside the namespace. `conntrack.maxPerCore: 0` leaves the
 * host-wide conntrack table size alone (kube-proxy would otherwise raise nf_conntrack_max).
 */
export function kubeProxyConfig(kubeconfig: string): string {
  return JSON.stringify(
    {
      apiVersion: 'kubeproxy.config.k8s.io/v1alpha1',
      kind: 'KubeProxyConfiguration',
      mode: 'iptables',
      clientConnection: { kubeconfig },
      hostnameOverride: NODE_NAME,
      bindAddress: NODE_NETWORK.nodeIp,
      clusterCIDR: NODE_NETWORK.podCidr,
      healthzBindAddress: '127.0.0.1:10256',
      metricsBindAddress: '127.0.0.1:10249',
      conntrack: { maxPerCore: 0, min: 0, tcpEstablishedTimeout: '0s', tcpCloseWaitTimeout: '0s' },
    },
    null,
    2,
  );
}

/**
 * CoreDNS: the cluster's names from the apiserver, and nothing else. There is no `forward`: a name
 * outside the cluster gets SERVFAIL/NXDOMAIN at once instead of a query leaving the namespace.
 */
export function corefile(kubeconfig: string): string {
  return `.:53 {
    bind ${NODE_NETWORK.nodeIp}
    errors
    health 127.0.0.1:8081
    ready 127.0.0.1:8181
    kubernetes ${NODE_NETWORK.clusterDomain} in-addr.arpa ip6.arpa {
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
