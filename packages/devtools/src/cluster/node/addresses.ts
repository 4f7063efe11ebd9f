/**
 * The real cluster's addresses. Every one of them exists only inside the network namespaces the
 * harness creates (see namespaces.ts and links.ts): nothing is added to the host's, so they never
 * collide with or route to the host's networks.
 */
export const CLUSTER_NETWORK = {
  /** The control plane's address, on the bridge that links the nodes (in the control plane's namespace). */
  controlPlaneIp: '10.200.0.1',
  /** The link between the sandboxes: the bridge's subnet, one address per node. */
  linkPrefixLength: 24,
  /** The bridge, in the control plane's namespace; every node's veth peer is attached to it. */
  bridge: 'br-nodes',
  /**
   * The bridge's MAC address, set when it is made. Left to the kernel, a bridge takes the lowest
   * MAC of its ports and changes it when that port leaves: a node powered off took the control
   * plane's address to a MAC the other nodes' ARP caches did not know, and their traffic to the
   * apiserver and CoreDNS went nowhere until the entries expired (a takeover measured 24.6 s
   * instead of at most 17 s). Locally administered; its last four bytes are 10.200.0.1.
   */
  bridgeMac: '02:00:0a:c8:00:01',
  /** Every node's pod range lies in this one (kube-proxy's clusterCIDR); node i has 10.244.i.0/24. */
  clusterPodCidr: '10.244.0.0/16',
  /** ClusterIPs; the first is the `kubernetes` Service, `.10` is cluster DNS. */
  serviceCidr: '10.96.0.0/16',
  apiServiceIp: '10.96.0.1',
  dnsServiceIp: '10.96.0.10',
  clusterDomain: 'cluster.local',
  /** The apiserver's port inside the control plane's namespace (the host reaches it through a forwarder). */
  apiServerPort: 6443,
} as const;

/** The most nodes one cluster may have: each costs a kubelet, a containerd and an image import. */
export const MAX_NODES = 8;

/** One node's name and addresses. */
export interface NodeAddresses {
  /** 0 for the first node. */
  readonly index: number;
  /** As the kubelet registers it and the Node authorizer knows it (`system:node:<name>`). */
  readonly name: string;
  /** The node's own address (the kubelet refuses a loopback node IP), on its veth `eth0`. */
  readonly ip: string;
  /** Its pods, on its bridge `cni0` (host-local IPAM). */
  readonly podCidr: string;
  /** The first address of its pod range, on `cni0`: its pods' default gateway. */
  readonly podGateway: string;
  /** The name of its veth's peer on the control plane's bridge (at most 15 bytes). */
  readonly peerLink: string;
  /**
   * Its `eth0`'s MAC address, the same on every power-on (its last four bytes are its address):
   * a node back from `powerOff` is reached at once, with no ARP entry of the others gone stale.
   */
  readonly mac: string;
}

/** The first node's name, as the kubelet registers it and the Node authorizer knows it. */
export const NODE_NAME = 'eso-mtls-node';

/**
 * Node `index`'s name and addresses: the first is `eso-mtls-node` on 10.200.0.2 with pods in
 * 10.244.0.0/24 (a one-node cluster's, as before there were several); node i is
 * `eso-mtls-node-<i+1>` on 10.200.0.<i+2> with pods in 10.244.<i>.0/24.
 */
export function nodeAddresses(index: number): NodeAddresses {
  if (!Number.isInteger(index) || index < 0 || index >= MAX_NODES) throw new Error(`node index ${index} must be an integer from 0 to ${MAX_NODES - 1}`);
  return {
    index,
    name: index === 0 ? NODE_NAME : `${NODE_NAME}-${index + 1}`,
    ip: `10.200.0.${index + 2}`,
    podCidr: `10.244.${index}.0/24`,
    podGateway: `10.244.${index}.1`,
    peerLink: `veth-node${index}`,
    mac: `02:00:0a:c8:00:${(index + 2).toString(16).padStart(2, '0')}`,
  };
}

/** The nodes of a cluster of `count`, or a named error for a count outside 1..{@link MAX_NODES}. */
export function clusterNodes(count: number): NodeAddresses[] {
  if (!Number.isInteger(count) || count < 1 || count > MAX_NODES) throw new Error(`nodes: ${count} is not a whole number from 1 to ${MAX_NODES}`);
  return Array.from({ length: count }, (_, i) => nodeAddresses(i));
}
