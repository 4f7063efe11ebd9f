// The real node's rules that need no node: how the cgroup host is read and what is refused, and
// that every file the node's components get keeps their state under the run's folder and leaves
// the host's settings alone.
import { describe, expect, it } from '@jest/globals';
import { mkdirSync, mkdtempSync, existsSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { NODE_NETWORK } from '../src/cluster/node/addresses.js';
import { bootstrapObjects } from '../src/cluster/node/bootstrap.js';
import { cgroupSupport, cgroupVersion, removeCgroupTree, runCgroupRoot } from '../src/cluster/node/cgroups.js';
import { containerdConfig, corefile, kubeProxyConfig, kubeletConfig, nodePaths } from '../src/cluster/node/configs.js';
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
    const kubelet = JSON.parse(kubeletConfig(paths, { cgroupRoot: '/eso-mtls-run', syncFrequency: '10s' })) as Record<string, unknown>;
    expect(kubelet).toMatchObject({
      cgroupDriver: 'cgroupfs',
      cgroupRoot: '/eso-mtls-run',
      failCgroupV1: false,
      address: NODE_NETWORK.nodeIp,
      syncFrequency: '10s',
    });
    for (const key of ['containerRuntimeEndpoint', 'resolvConf', 'podLogsDir']) expect(String(kubelet[key])).toContain('/tmp/run-1/node/');
  });

  it('leave the host-wide conntrack table to the host, and send no DNS query upstream', () => {
    expect(JSON.parse(kubeProxyConfig('/k')).conntrack).toMatchObject({ maxPerCore: 0, min: 0 });
    expect(corefile('/k')).not.toMatch(/forward|proxy/);
  });

  it('give cluster DNS a fixed ClusterIP whose only endpoint is the node, inside the namespace', () => {
    const [, , service, slice] = bootstrapObjects() as [unknown, unknown, { spec: { clusterIP: string } }, { endpoints: { addresses: string[] }[] }];
    expect(service.spec.clusterIP).toBe(NODE_NETWORK.dnsServiceIp);
    expect(slice.endpoints.flatMap((e) => e.addresses)).toEqual([NODE_NETWORK.nodeIp]);
  });

  it('write only per-namespace settings, and the host-wide ones the kubelet writes only to private copies', () => {
    const script = sandboxSetupScript('/tmp/run-1');
    const writes = [...script.matchAll(/> (\/proc\/sys\/\S+)/g)].map((m) => m[1]);
    expect(writes).toEqual(['/proc/sys/net/ipv4/ip_forward', '/proc/sys/net/bridge/bridge-nf-call-iptables']);
    for (const s of PRIVATE_SYSCTLS) expect(script).toContain(`mount --bind "$root/sysctl/${s.replace(/\//g, '.')}" /proc/sys/${s}`);
    expect(script).toContain('mount --bind "$root/resolv.conf.host" /etc/resolv.conf');
  });
});
