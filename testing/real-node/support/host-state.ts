import { execFileSync } from 'node:child_process';
import { closeSync, openSync, readFileSync, readdirSync, readlinkSync } from 'node:fs';

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

/**
 * The PID namespaces of `pids` (as their /proc/PID/ns/pid links read, e.g. "pid:[4026532851]"), each
 * held open until `release()`. The number is the namespace file's inode, which the kernel gives to a
 * new namespace once the old one is freed: another real node started beside this one (jest runs two
 * suites at a time) was seen with a stopped node's number within seconds, and its processes read as
 * the stopped node's. Held, a namespace keeps its number while it empties.
 */
export function holdPidNamespaces(pids: readonly number[]): { readonly namespaces: readonly string[]; release(): void } {
  const fds = pids.map((pid) => openSync(`/proc/${pid}/ns/pid`, 'r'));
  return {
    namespaces: fds.map((fd) => readlinkSync(`/proc/self/fd/${fd}`)),
    release: () => fds.forEach((fd) => closeSync(fd)),
  };
}

/** The host PIDs of every process in the PID namespace `pidNamespace` (a /proc/PID/ns/pid link, e.g. "pid:[4026532851]"); hold it ({@link holdPidNamespaces}) across its end. */
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
