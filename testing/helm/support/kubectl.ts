import { execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { repoRoot } from '@eso-mtls/test-kit/repo';

let kubectlPath: string | undefined;

/**
 * Real kubectl of the test apiserver's version (scripts/ensure-kubectl.sh builds it once and
 * caches it) against one kubeconfig, with its own HOME, so its discovery cache is never the user's.
 */
export class Kubectl {
  readonly home = mkdtempSync(join(tmpdir(), 'eso-mtls-kubectl-'));

  constructor(private readonly kubeconfigPath: string) {}

  /** Runs kubectl with `stdin` as input: its stdout, or an Error carrying its stderr. */
  run(args: readonly string[], stdin = ''): string {
    kubectlPath ??= execFileSync('bash', [resolve(repoRoot, 'scripts/ensure-kubectl.sh')], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'inherit'] }).trim();
    try {
      return execFileSync(kubectlPath, ['--kubeconfig', this.kubeconfigPath, ...args], {
        encoding: 'utf8',
        input: stdin,
        maxBuffer: 16 << 20,
        env: { PATH: process.env.PATH, HOME: this.home },
      });
    } catch (e) {
      throw new Error(`kubectl ${args.join(' ')} failed: ${String((e as { stderr?: string }).stderr ?? e).trim()}`, { cause: e });
    }
  }

  remove(): void {
    rmSync(this.home, { recursive: true, force: true });
  }
}
