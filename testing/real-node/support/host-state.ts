import { execFileSync } from 'node:child_process';
import { readFileSync, readdirSync, readlinkSync } from 'node:fs';

/**
 * What the real node must never change on the host: its routes, addresses and links, its
 * firewall rules (nft and legacy iptables), forwarding, conntrack's size and the host-wide
 * kernel settings the kubelet writes.
 */
export function hostNetworkState(): Record<string, string> {
  const run = (command: string, args: readonly string[]): string => {
    try {
      return execFileSync(command, args, { encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] });
    } catch {
      return `(${command} failed)`;
    }
  };
  const sysctl = (path: string): string => {
    try {
      return readFileSync(`/proc/sys/${path}`, 'utf8').trim();
    } catch {
      return '(absent)';
    }
  };
  return {
    routes: run('ip', ['route', 'show', 'table', 'all']),
    addresses: run('ip', ['-br', 'addr']),
    nftables: run('iptables-nft-save', []).replace(/^#.*$/gm, ''),
    legacy: run('iptables-legacy-save', []).replace(/^#.*$/gm, ''),
    ipForward: sysctl('net/ipv4/ip_forward'),
    conntrackMax: sysctl('net/netfilter/nf_conntrack_max'),
    panic: sysctl('kernel/panic'),
    panicOnOops: sysctl('kernel/panic_on_oops'),
    overcommit: sysctl('vm/overcommit_memory'),
  };
}

/** The host PIDs of every process in the PID namespace `pidNamespace` (a /proc/PID/ns/pid link, e.g. "pid:[4026532851]"). */
export function processesInPidNamespace(pidNamespace: string): number[] {
  return readdirSync('/proc')
    .filter((entry) => /^\d+$/.test(entry))
    .filter((pid) => {
      try {
        return readlinkSync(`/proc/${pid}/ns/pid`) === pidNamespace;
      } catch {
        return false; // gone, or a zombie
      }
    })
    .map(Number);
}
