/**
 * The real node's addresses. Every one of them exists only inside the network namespace the
 * harness creates (see namespaces.ts): nothing is added to the host's, so they never collide with
 * or route to the host's networks.
 */
export const NODE_NETWORK = {
  /** The node's own address (the kubelet refuses a loopback node IP), on a veth inside the namespace. */
  nodeIp: '10.200.0.2',
  nodePrefixLength: 24,
  /** Pods, on the bridge `cni0` (host-local IPAM). */
  podCidr: '10.244.0.0/24',
  podGateway: '10.244.0.1',
  /** ClusterIPs; the first is the `kubernetes` Service, `.10` is cluster DNS. */
  serviceCidr: '10.96.0.0/16',
  apiServiceIp: '10.96.0.1',
  dnsServiceIp: '10.96.0.10',
  clusterDomain: 'cluster.local',
  /** The apiserver's port inside the namespace (the host reaches it through a forwarder). */
  apiServerPort: 6443,
} as const;

/** The node's name, as the kubelet registers it and the Node authorizer knows it. */
export const NODE_NAME = 'eso-mtls-node';
