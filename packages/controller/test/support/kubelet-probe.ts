import { type ChildProcess, spawn } from 'node:child_process';
import { resolve } from 'node:path';
import { createInterface } from 'node:readline';
import type { V1Probe } from '@kubernetes/client-node';
import { repoRoot } from '@eso-mtls/test-kit/repo';

/** One probe as the kubelet judges it: ok when 2xx/3xx within timeoutSeconds. */
export interface ProbeResult {
  readonly phase: number;
  /** Start order within the phase. */
  readonly seq: number;
  readonly ms: number;
  readonly status: number;
  readonly ok: boolean;
}

/** What a kubelet would have concluded from the probes, and the figures behind it. */
export interface ProbeVerdict {
  /** Longest run of consecutive misses any one kubelet (phase) saw; it restarts the pod at failureThreshold. */
  readonly maxConsecutiveMisses: number;
  readonly failureThreshold: number;
  readonly probes: number;
  readonly misses: number;
  readonly worstMs: number;
}

/**
 * Models the kubelet running `probe` (periodSeconds, timeoutSeconds, failureThreshold) against
 * `url`, from a child process so the test's own work never delays a probe. `phases` kubelets run
 * side by side, offset by period/phases, because a pause can fall anywhere between two probes.
 */
export class KubeletProbe {
  private readonly child: ChildProcess;
  private readonly results: ProbeResult[] = [];
  private readonly exited: Promise<void>;

  constructor(
    url: string,
    readonly probe: V1Probe,
    phases = 10,
  ) {
    const periodMs = (probe.periodSeconds ?? 10) * 1000;
    const timeoutMs = (probe.timeoutSeconds ?? 1) * 1000;
    this.child = spawn(
      process.execPath,
      [
        '--import',
        resolve(repoRoot, 'scripts/register-ts.mjs'),
        resolve(repoRoot, 'packages/controller/test/support/kubelet-probe-child.ts'),
        url,
        String(periodMs),
        String(timeoutMs),
        String(phases),
      ],
      { stdio: ['pipe', 'pipe', 'inherit'] },
    );
    createInterface({ input: this.child.stdout! }).on('line', (l) => this.results.push(JSON.parse(l) as ProbeResult));
    this.exited = new Promise((r) => this.child.once('exit', () => r()));
  }

  /** Stops probing, waits for the probes in flight, and judges them as the kubelet would. */
  async stop(): Promise<ProbeVerdict> {
    this.child.stdin!.end();
    await this.exited;
    return judge(this.results, this.probe.failureThreshold ?? 3);
  }
}

/** The longest run of consecutive misses per phase, in the order each phase's probes were started. */
export function judge(results: readonly ProbeResult[], failureThreshold: number): ProbeVerdict {
  const run = new Map<number, number>();
  let maxConsecutiveMisses = 0;
  const started = [...results].sort((a, b) => a.phase - b.phase || a.seq - b.seq);
  for (const r of started) {
    const n = r.ok ? 0 : (run.get(r.phase) ?? 0) + 1;
    run.set(r.phase, n);
    maxConsecutiveMisses = Math.max(maxConsecutiveMisses, n);
  }
  return {
    maxConsecutiveMisses,
    failureThreshold,
    probes: results.length,
    misses: results.filter((r) => !r.ok).length,
    worstMs: Math.max(0, ...results.map((r) => r.ms)),
  };
}
