import { existsSync, lstatSync, readFileSync, readdirSync, rmdirSync } from 'node:fs';

/** The host's cgroup set-up, as far as running a kubelet depends on it. */
export interface CgroupHost {
  /** 1: the v1 (or hybrid) hierarchy, one mount per controller; 2: the unified hierarchy. */
  readonly version: 1 | 2;
  /** True when systemd is PID 1 of the host (it then owns the cgroup tree). */
  readonly systemd: boolean;
}

/** What the harness does on a host: run with the cgroupfs driver, or refuse with a reason and a remedy. */
export type CgroupSupport = { readonly ok: true; readonly driver: 'cgroupfs'; readonly note?: string } | { readonly ok: false; readonly reason: string };

/** Reads the host's cgroup version (from /proc/self/mountinfo's fs type at /sys/fs/cgroup) and whether systemd runs. */
export function detectCgroupHost(mountinfo = readFileSync('/proc/self/mountinfo', 'utf8'), systemdRunning = existsSync('/run/systemd/system')): CgroupHost {
  return { version: cgroupVersion(mountinfo), systemd: systemdRunning };
}

/** 2 when /sys/fs/cgroup is a cgroup2 mount, else 1 (a tmpfs holding one cgroup mount per controller). */
export function cgroupVersion(mountinfo: string): 1 | 2 {
  for (const line of mountinfo.split('\n')) {
    const [before, after] = line.split(' - ');
    if (before === undefined || after === undefined) continue;
    if (before.split(' ')[4] === '/sys/fs/cgroup') return after.split(' ')[0] === 'cgroup2' ? 2 : 1;
  }
  return 1;
}

/**
 * The rule: the kubelet and containerd run with the cgroupfs driver under a cgroupRoot of their
 * own, which needs a tree the harness may write and nobody else manages.
 * - v1 without systemd (our machines): supported.
 * - v2 without systemd: cgroupfs works on the unified tree, but nothing here tests it: allowed, with a note.
 * - any version with systemd: refused. systemd owns the tree and moves or removes cgroups it did
 *   not create; running there needs the systemd driver inside a delegated scope, which this
 *   harness does not set up.
 */
export function cgroupSupport(host: CgroupHost): CgroupSupport {
  if (host.systemd) {
    return {
      ok: false,
      reason:
        `this host runs systemd (cgroup v${host.version}), which owns the cgroup tree; the real node runs only with the cgroupfs driver on a tree nobody else manages. ` +
        'Run it in a container or VM without systemd as PID 1 (CI runners and our dev machines are such), or use `eso-mtls dev-cluster` without --node.',
    };
  }
  if (host.version === 2)
    return { ok: true, driver: 'cgroupfs', note: 'cgroup v2 without systemd: the cgroupfs driver on the unified tree is untested here (our machines run v1)' };
  return { ok: true, driver: 'cgroupfs' };
}

/** The kubelet's cgroupRoot for one run: a subtree named after the run, never the top-level `kubepods`. */
export function runCgroupRoot(runId: string): string {
  if (!/^[a-z0-9-]{1,40}$/.test(runId)) throw new Error(`run id ${JSON.stringify(runId)} must be 1-40 of [a-z0-9-]`);
  return `/eso-mtls-${runId}`;
}

/**
 * Removes the run's cgroup subtree from every hierarchy, deepest first, once nothing runs in it
 * (the caller has killed the namespaces). Returns the folders it could not remove, for the report.
 */
export function removeCgroupTree(cgroupRoot: string, mountRoot = '/sys/fs/cgroup'): string[] {
  const left: string[] = [];
  const hierarchies = existsSync(`${mountRoot}/cgroup.controllers`) ? [mountRoot] : readdirSync(mountRoot).map((h) => `${mountRoot}/${h}`);
  for (const hierarchy of hierarchies) {
    const top = `${hierarchy}${cgroupRoot}`;
    if (!existsSync(top) || lstatSync(hierarchy).isSymbolicLink()) continue;
    for (const dir of subtree(top).reverse()) {
      try {
        rmdirSync(dir);
      } catch {
        left.push(dir);
      }
    }
  }
  return left;
}

// `top` and every folder below it, parents before children.
function subtree(top: string): string[] {
  const out = [top];
  for (let i = 0; i < out.length; i++) {
    for (const e of readdirSync(out[i]!, { withFileTypes: true })) if (e.isDirectory()) out.push(`${out[i]}/${e.name}`);
  }
  return out;
}
