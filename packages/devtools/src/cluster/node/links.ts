import { CLUSTER_NETWORK, type NodeAddresses } from './addresses.js';

/** One `ip` command, run with `nsenter --target=<pid> --net` in the sandbox it names. */
export interface LinkCommand {
  readonly in: 'control-plane' | 'node';
  readonly ip: readonly string[];
}

/**
 * The commands that link a node to the others, all inside namespaces the harness made: a veth
 * pair made in the node's network namespace, `eth0` there and its peer moved into the control
 * plane's (named by its host PID, which `ip` resolves in the host's PID namespace, where nsenter
 * --net leaves it), joined to the bridge; `eth0` with the node's fixed MAC, so a node powered on
 * again is the same neighbour to the others; the node's address and a default route to the control
 * plane; a route to every other node's pods through that node; and, in the control plane's
 * namespace, a route to this node's pods (the apiserver's pod proxy). The host's network namespace
 * is never entered.
 */
export function linkCommands(node: NodeAddresses, all: readonly NodeAddresses[], controlPlanePid: number): LinkCommand[] {
  const { bridge, controlPlaneIp, linkPrefixLength } = CLUSTER_NETWORK;
  return [
    { in: 'node', ip: ['link', 'add', 'eth0', 'address', node.mac, 'type', 'veth', 'peer', 'name', node.peerLink, 'netns', String(controlPlanePid)] },
    { in: 'control-plane', ip: ['link', 'set', node.peerLink, 'master', bridge] },
    { in: 'control-plane', ip: ['link', 'set', node.peerLink, 'up'] },
    { in: 'control-plane', ip: ['route', 'replace', node.podCidr, 'via', node.ip] },
    { in: 'node', ip: ['addr', 'add', `${node.ip}/${linkPrefixLength}`, 'dev', 'eth0'] },
    { in: 'node', ip: ['link', 'set', 'eth0', 'up'] },
    { in: 'node', ip: ['route', 'add', 'default', 'via', controlPlaneIp] },
    ...all.filter((other) => other.index !== node.index).map((other): LinkCommand => ({ in: 'node', ip: ['route', 'add', other.podCidr, 'via', other.ip] })),
  ];
}
