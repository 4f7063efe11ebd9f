import { type ChildProcess, spawn } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { METRIC_NAMES } from '@eso-mtls/metrics';

const ROOT = new URL('../../', import.meta.url).pathname;
/** The secret every provider serves, and the one the ESO client asks for. */
const DATA = { secrets: { 'db-password': { value: 'soak' } } };

/** One provider pod: the labelled Service it serves, its folders and its loopback ports. */
export interface ProviderSpec {
  readonly namespace: string;
  readonly service: string;
  /** The mounted `external-secrets-provider-tls` folder. */
  readonly certDir: string;
  readonly workDir: string;
  readonly port: number;
  readonly healthPort: number;
}

/** Hot reloads and refused reloads, as a provider's own metrics count them. */
export interface ReloadCounts {
  reloads: number;
  refused: number;
}

/**
 * One provider process: examples/file-provider from its dist, under the environment the soak gives
 * (libfaketime's). Restarting it keeps its ports; its reload counters add up over its lifetimes.
 */
export class ProviderProcess {
  private child: ChildProcess | undefined;
  /** Counts of the lifetimes that ended, read just before each stop. */
  private readonly ended: ReloadCounts = { reloads: 0, refused: 0 };

  constructor(
    readonly spec: ProviderSpec,
    private readonly env: NodeJS.ProcessEnv,
    private readonly onExit: (spec: ProviderSpec, code: number | null, signal: NodeJS.Signals | null) => void,
    /** Told each line the provider logs about a refused certificate. */
    private readonly onRefusal: (spec: ProviderSpec, line: string) => void,
  ) {
    writeFileSync(join(spec.workDir, 'data.json'), JSON.stringify(DATA));
  }

  /** `<service>.<namespace>.svc:<port>`: the name ESO verifies, with the port it dials. */
  get address(): string {
    return `${this.spec.service}.${this.spec.namespace}.svc:${this.spec.port}`;
  }

  get running(): boolean {
    return this.child !== undefined && this.child.exitCode === null && this.child.signalCode === null;
  }

  /** Starts the process and resolves once it serves (its folder must be mounted). */
  start(): Promise<void> {
    const s = this.spec;
    const child = spawn(
      process.execPath,
      [
        join(ROOT, 'examples/file-provider/dist/main.js'),
        ...['--data-file', join(s.workDir, 'data.json'), '--cert-dir', s.certDir, '--host', '127.0.0.1'],
        ...['--port', String(s.port), '--health-port', String(s.healthPort), '--namespace', s.namespace, '--service', s.service],
      ],
      { cwd: ROOT, env: this.env, stdio: ['ignore', 'pipe', 'pipe'] },
    );
    this.child = child;
    let stderr = '';
    child.stderr!.on('data', (d: Buffer) => {
      stderr = (stderr + d.toString()).slice(-4000);
    });
    child.once('exit', (code, signal) => this.onExit(s, code, signal));
    return new Promise((resolve, reject) => {
      createInterface({ input: child.stdout! }).on('line', (line) => {
        if (line.includes('"message":"serving"')) resolve();
        if (line.includes('refused')) this.onRefusal(s, line);
      });
      child.once('exit', (code, signal) => reject(new Error(`provider ${s.namespace}/${s.service} exited (${code ?? signal}) before serving: ${stderr}`)));
    });
  }

  /** Reads the counters, then stops the process (SIGKILL: a pod killed on its node). */
  async stop(): Promise<void> {
    const child = this.child;
    if (child === undefined || !this.running) return;
    const last = await this.currentCounts();
    this.ended.reloads += last.reloads;
    this.ended.refused += last.refused;
    const exited = new Promise((r) => child.once('exit', r));
    child.kill('SIGKILL');
    await exited;
  }

  /** Hot reloads and refusals over every lifetime of this provider. */
  async reloadCounts(): Promise<ReloadCounts> {
    const now = this.running ? await this.currentCounts() : { reloads: 0, refused: 0 };
    return { reloads: this.ended.reloads + now.reloads, refused: this.ended.refused + now.refused };
  }

  private async currentCounts(): Promise<ReloadCounts> {
    const scrape = await (await fetch(`http://127.0.0.1:${this.spec.healthPort}/metrics`)).text();
    return { reloads: sum(scrape, METRIC_NAMES.providerHotReloads), refused: sum(scrape, METRIC_NAMES.providerHotReloadFailures) };
  }
}

/** The sum of every series of counter `name` in a Prometheus text scrape. */
export function sum(scrape: string, name: string): number {
  return scrape
    .split('\n')
    .filter((l) => l.startsWith(`${name}{`) || l.startsWith(`${name} `))
    .reduce((n, l) => n + Number(l.slice(l.lastIndexOf(' ') + 1)), 0);
}
