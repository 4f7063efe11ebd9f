// The real node's rules that need no node: how the cgroup host is read and what is refused, and
// that every file the node's components get keeps their state under the run's folder and leaves
// the host's settings alone.
import { describe, expect, it } from '@jest/globals';
import { mkdirSync, mkdtempSync, existsSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { CLUSTER_NETWORK, MAX_NODES, clusterNodes, nodeAddresses } from '../src/cluster/node/addresses.js';
import { bootstrapObjects } from '../src/cluster/node/bootstrap.js';
import { cgroupSupport, cgroupVersion, removeCgroupTree, runCgroupRoot } from '../src/cluster/node/cgroups.js';
import {
  MAX_SOCKET_PATH,
  cniConfig,
  containerdConfig,
  corefile,
  kubeProxyConfig,
  kubeletArgs,
  kubeletConfig,
  nodePaths,
  socketPathTooLong,
} from '../src/cluster/node/configs.js';
import { linkCommands } from '../src/cluster/node/links.js';
import { PRIVATE_SYSCTLS, sandboxSetupScript } from '../src/cluster/node/namespaces.js';

const V1 = [
  '25 1 0:22 / /sys rw,nosuid - sysfs sysfs rw',
  '26 25 0:23 / /sys/fs/cgroup rw,nosuid - tmpfs tmpfs ro,mode=755',
  '27 26 0:24 / /sys/fs/cgroup/memory rw,nosuid - cgroup cgroup rw,memory',
].join('\n');
const V2 = ['25 1 0:22 / /sys rw - sysfs sysfs rw', '26 25 0:23 / /sys/fs/cgroup rw,nosuid - cgroup2 cgroup2 rw,nsdelegate'].join('\n');

describe('the real node on its host', () => {
  it('reads the cgroup version from where /sys/fs/cgroup is mounted', () => {
    expect(cgroupVersion(V1)).toBe(1);
    expect(cgroupVersion(V2)).toBe(2);
  });

  it('runs on cgroup v1 without systemd, allows v2 without systemd with a note, and refuses systemd hosts saying what to do', () => {
    expect(cgroupSupport({ version: 1, systemd: false })).toEqual({ ok: true, driver: 'cgroupfs' });
    expect(cgroupSupport({ version: 2, systemd: false })).toMatchObject({ ok: true, driver: 'cgroupfs', note: expect.stringContaining('untested') });
    for (const version of [1, 2] as const) {
      const refused = cgroupSupport({ version, systemd: true });
      expect(refused.ok).toBe(false);
      expect(!refused.ok && refused.reason).toMatch(/systemd .*owns the cgroup tree.*without --node/);
    }
  });

  it("names the run's cgroup subtree after the run, never kubepods, and refuses a name that could escape it", () => {
    expect(runCgroupRoot('1a2b')).toBe('/eso-mtls-1a2b');
    for (const bad of ['', '../kubepods', 'a/b', 'A', 'x'.repeat(41)]) expect(() => runCgroupRoot(bad)).toThrow(/must be 1-40 of/);
  });

  it('removes the subtree from every hierarchy, deepest first, and nothing beside it', () => {
    const mount = mkdtempSync(join(tmpdir(), 'cgroup-'));
    for (const h of ['cpu', 'memory']) {
      mkdirSync(join(mount, h, 'eso-mtls-run', 'kubepods', 'burstable'), { recursive: true });
      mkdirSync(join(mount, h, 'kubepods'), { recursive: true });
    }
    expect(removeCgroupTree('/eso-mtls-run', mount)).toEqual([]);
    for (const h of ['cpu', 'memory']) {
      expect(existsSync(join(mount, h, 'eso-mtls-run'))).toBe(false);
      expect(existsSync(join(mount, h, 'kubepods'))).toBe(true);
    }
  });
});

describe("the node components' files", () => {
  const paths = nodePaths('/tmp/run-1/node');

  it('keep containerd and the kubelet under the run folder, with the cgroupfs driver and no oom_score_adj below containerd', () => {
    const toml = containerdConfig(paths, '/usr/sbin/runc', '/usr/lib/cni');
    for (const line of toml.split('\n').filter((l) => /^\s*(root|state|address|conf_dir) =/.test(l))) expect(line).toContain('/tmp/run-1/node/');
    expect(toml).toContain('SystemdCgroup = false');
    expect(toml).toContain('restrict_oom_score_adj = true');
    const kubelet = JSON.parse(kubeletConfig(paths, { node: nodeAddresses(0), cgroupRoot: '/eso-mtls-run/eso-mtls-node', syncFrequency: '10s' })) as Record<
      string,
      unknown
    >;
    expect(kubelet).toMatchObject({
      cgroupDriver: 'cgroupfs',
      cgroupRoot: '/eso-mtls-run/eso-mtls-node',
      failCgroupV1: false,
      address: '10.200.0.2',
      syncFrequency: '10s',
    });
    for (const key of ['containerRuntimeEndpoint', 'resolvConf', 'podLogsDir']) expect(String(kubelet[key])).toContain('/tmp/run-1/node/');
  });

  it('leave the host-wide conntrack table to the host, and send no DNS query upstream', () => {
    expect(JSON.parse(kubeProxyConfig('/k', nodeAddresses(0))).conntrack).toMatchObject({ maxPerCore: 0, min: 0 });
    expect(corefile('/k')).not.toMatch(/forward|proxy/);
  });

  it("give cluster DNS a fixed ClusterIP whose only endpoint is CoreDNS on the control plane's address, which every node routes to", () => {
    const [, , service, slice] = bootstrapObjects() as [unknown, unknown, { spec: { clusterIP: string } }, { endpoints: { addresses: string[] }[] }];
    expect(service.spec.clusterIP).toBe(CLUSTER_NETWORK.dnsServiceIp);
    expect(slice.endpoints.flatMap((e) => e.addresses)).toEqual([CLUSTER_NETWORK.controlPlaneIp]);
    expect(corefile('/k')).toContain(`bind ${CLUSTER_NETWORK.controlPlaneIp}\n`);
  });

  it('write only per-namespace settings, and the host-wide ones the kubelet writes only to private copies', () => {
    const script = sandboxSetupScript('/tmp/run-1', 'node');
    const writes = [...script.matchAll(/> (\/proc\/sys\/\S+)/g)].map((m) => m[1]);
    expect(writes).toEqual(['/proc/sys/net/ipv4/ip_forward', '/proc/sys/net/bridge/bridge-nf-call-iptables']);
    for (const s of PRIVATE_SYSCTLS) expect(script).toContain(`mount --bind "$root/sysctl/${s.replace(/\//g, '.')}" /proc/sys/${s}`);
    expect(script).toContain('mount --bind "$root/resolv.conf.host" /etc/resolv.conf');
    // The control plane routes nothing: it writes no setting at all, and makes the bridge the nodes join.
    const controlPlane = sandboxSetupScript('/tmp/run-1', 'control-plane');
    expect([...controlPlane.matchAll(/> (\/proc\/sys\/\S+)/g)]).toEqual([]);
    expect(controlPlane).toContain(`ip addr add 10.200.0.1/24 dev ${CLUSTER_NETWORK.bridge}`);
  });
});

describe('several nodes', () => {
  it('name and address each node apart: the first as a one-node cluster has it, the others after it, and refuse a count out of 1..8', () => {
    expect(clusterNodes(2)).toEqual([
      {
        index: 0,
        name: 'eso-mtls-node',
        ip: '10.200.0.2',
        podCidr: '10.244.0.0/24',
        podGateway: '10.244.0.1',
        peerLink: 'veth-node0',
        mac: '02:00:0a:c8:00:02',
      },
      {
        index: 1,
        name: 'eso-mtls-node-2',
        ip: '10.200.0.3',
        podCidr: '10.244.1.0/24',
        podGateway: '10.244.1.1',
        peerLink: 'veth-node1',
        mac: '02:00:0a:c8:00:03',
      },
    ]);
    for (const n of clusterNodes(MAX_NODES)) expect(n.peerLink.length).toBeLessThanOrEqual(15);
    for (const bad of [0, MAX_NODES + 1, 1.5, Number.NaN]) expect(() => clusterNodes(bad)).toThrow(`is not a whole number from 1 to ${MAX_NODES}`);
  });

  it("give each node's kubelet, kube-proxy and pod network its own name, address and pod range, and kube-proxy every node's pods", () => {
    const second = nodeAddresses(1);
    const paths2 = nodePaths('/tmp/run-1/eso-mtls-node-2');
    expect(kubeletArgs(paths2, second, '/c', '/k')).toEqual(expect.arrayContaining(['--hostname-override=eso-mtls-node-2', '--node-ip=10.200.0.3']));
    expect(JSON.parse(kubeProxyConfig('/k', second))).toMatchObject({
      hostnameOverride: 'eso-mtls-node-2',
      bindAddress: '10.200.0.3',
      clusterCIDR: '10.244.0.0/16',
    });
    const cni = JSON.parse(cniConfig(paths2, second)) as { plugins: { ipam?: { ranges: { subnet: string; gateway: string }[][] } }[] };
    expect(cni.plugins[0]!.ipam!.ranges).toEqual([[{ subnet: '10.244.1.0/24', gateway: '10.244.1.1' }]]);
  });

  it("refuses a node folder too deep for its unix sockets, naming the socket, and keeps containerd's socket short", () => {
    expect(socketPathTooLong(nodePaths('/tmp/eso-mtls-getting-started-AbCdEf/.eso-mtls-dev/eso-mtls-node'))).toBeUndefined();
    expect(nodePaths('/r').containerdSocket).toBe('/r/containerd.sock');
    const deep = `/home/someone/${'x'.repeat(60)}/.eso-mtls-dev/eso-mtls-node`;
    expect(socketPathTooLong(nodePaths(deep))).toEqual({ path: `${deep}/containerd.sock.ttrpc`, bytes: deep.length + '/containerd.sock.ttrpc'.length });
    expect(deep.length + '/containerd.sock.ttrpc'.length).toBeGreaterThan(MAX_SOCKET_PATH);
  });

  it("link a node only inside the harness's namespaces: a veth into the control plane's bridge, a route to each other node's pods, and the control plane's route to this one's", () => {
    const [a, b] = clusterNodes(2) as [ReturnType<typeof nodeAddresses>, ReturnType<typeof nodeAddresses>];
    const commands = linkCommands(b, [a, b], 4242).map((c) => `${c.in}: ip ${c.ip.join(' ')}`);
    expect(commands).toEqual([
      'node: ip link add eth0 address 02:00:0a:c8:00:03 type veth peer name veth-node1 netns 4242',
      `control-plane: ip link set veth-node1 master ${CLUSTER_NETWORK.bridge}`,
      'control-plane: ip link set veth-node1 up',
      'control-plane: ip route replace 10.244.1.0/24 via 10.200.0.3',
      'node: ip addr add 10.200.0.3/24 dev eth0',
      'node: ip link set eth0 up',
      'node: ip route add default via 10.200.0.1',
      'node: ip route add 10.244.0.0/24 via 10.200.0.2',
    ]);
  });
});
