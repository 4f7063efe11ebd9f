/**
 * `@eso-mtls/devtools/cluster`: the launcher `eso-mtls dev-cluster` runs, and the test harness
 * (testing/envtest, testing/real-node) starts its clusters with: etcd and kube-apiserver in
 * process groups of their own, the static-token identities they know, and, with `startRealCluster`,
 * real nodes (containerd, runc, the kubelet, kube-proxy), each in namespaces of its own, beside a
 * control plane (with kube-controller-manager, kube-scheduler and CoreDNS) in namespaces of its own.
 *
 * @packageDocumentation
 * @module @eso-mtls/devtools/cluster
 */
export { type BuildScriptProduct, type ControlPlaneBinaries, locateBinaries } from './binaries.js';
export { type ControlPlaneLaunch, type LaunchedControlPlane, launchControlPlane } from './control-plane.js';
export {
  ADMIN,
  type ApiServerEndpoint,
  type IdentitySpec,
  KUBE_CONTROLLER_MANAGER,
  KUBE_PROXY,
  KUBE_SCHEDULER,
  nodeIdentity,
  type StaticIdentity,
  tokenKubeConfig,
  writeKubeconfig,
} from './identities.js';
export { MAX_NODES, NODE_NAME, type NodeAddresses, nodeAddresses } from './node/addresses.js';
export { type RealCluster, type RealClusterOptions, realNodeUnavailable, startRealCluster } from './node/cluster.js';
export { type NodeBinaries, locateNodeBinaries } from './node/components.js';
export type { RealNode } from './node/real-node.js';
export { splitImageName } from './node/image-name.js';
export { freePort, freePorts } from './ports.js';
export { ServerProcess, type SpawnWrap, signalGroup } from './process-group.js';
