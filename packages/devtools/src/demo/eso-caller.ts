import {
  CertificateWatcher,
  type ProviderCallError,
  ProviderChannelPool,
  type ReloadFailure,
  type SecretStoreProviderClient,
  type TlsMaterial,
  createSecretStoreProviderClient,
} from '@eso-mtls/grpc';
import { DEMO_SECRET_KEY } from './provider-fleet.js';
import { DEMO_SCHEDULE } from './schedule.js';

/** A provider address the caller calls: the name its certificate must carry, and where it listens. */
export interface CallTarget {
  readonly namespace: string;
  readonly service: string;
  /** `<service>.<namespace>.svc:<port>`, verified against the server certificate. */
  readonly address: string;
  /** `127.0.0.1:<port>`: what is dialled. */
  readonly connectTo: string;
}

/** One failed call. */
export interface CallFailure {
  readonly target: CallTarget;
  readonly message: string;
}

/** Options of {@link EsoCaller}. */
export interface EsoCallerOptions {
  /** The folder ESO's client Secret is mounted at. */
  readonly directory: string;
  /** A call failed: every failure is reported, none retried. */
  readonly onFailure: (failure: CallFailure) => void;
  /** The client certificate or bundle was swapped in (not the first load). */
  readonly onReload: (material: TlsMaterial, previous: TlsMaterial) => void;
  /** A changed folder was refused (the last good pair kept). */
  readonly onReloadRefused: (failure: ReloadFailure) => void;
}

interface Loop {
  readonly target: CallTarget;
  readonly client: SecretStoreProviderClient;
  running: boolean;
  done: Promise<void>;
}

/**
 * ESO core's side: the client certificate from its mounted folder (reloaded on change, last good
 * pair kept), one channel per provider address from a pool that moves new calls to rotated
 * material, and GetSecret called continuously on every target over mTLS, without retries, so
 * any failure shows.
 */
export class EsoCaller {
  private readonly watcher: CertificateWatcher;
  private pool: ProviderChannelPool | undefined;
  private readonly loops = new Map<string, Loop>();
  private readonly counts = { made: 0, failed: 0 };
  private readonly perTarget = new Map<string, { made: number; failed: number }>();
  /** While set, every loop waits for it before its next call. */
  private paused: { readonly resumed: Promise<void>; readonly resume: () => void } | undefined;
  private readonly inFlight = new Set<Promise<unknown>>();

  constructor(private readonly options: EsoCallerOptions) {
    // Refusals go to onReloadRefused, which the demo prints its own way: the watcher's line would repeat them.
    this.watcher = new CertificateWatcher({ directory: options.directory, purpose: 'clientAuth', pollIntervalMs: 1000, log: false });
    this.watcher.onMaterial((material, previous) => previous !== undefined && options.onReload(material, previous));
    this.watcher.onFailure((failure) => options.onReloadRefused(failure));
  }

  /** Loads the client certificate (the folder must be mounted). */
  async start(): Promise<void> {
    await this.watcher.start();
    this.pool = new ProviderChannelPool({ material: this.watcher, drainTimeoutMs: DEMO_SCHEDULE.callDeadlineMs * 2 });
  }

  /** Calls made and failed so far. */
  get calls(): { readonly made: number; readonly failed: number } {
    return { ...this.counts };
  }

  /** Calls made and failed per address. */
  callsTo(address: string): { readonly made: number; readonly failed: number } {
    return { ...(this.perTarget.get(address) ?? { made: 0, failed: 0 }) };
  }

  /** Client certificate swaps after the first load, and refused ones. */
  get reloads(): { readonly reloads: number; readonly refused: number } {
    const s = this.watcher.stats;
    return { reloads: s.reloads, refused: s.failures };
  }

  /** Whether `address` is being called. */
  calling(address: string): boolean {
    return this.loops.has(address);
  }

  /** Starts calling `target` continuously. */
  add(target: CallTarget): void {
    if (this.pool === undefined) throw new Error('EsoCaller.add before start()');
    if (this.loops.has(target.address)) return;
    const channel = this.pool.channel(target.address, { connectTo: target.connectTo });
    const client = createSecretStoreProviderClient(channel, { retry: false, timeoutMs: DEMO_SCHEDULE.callDeadlineMs });
    const loop: Loop = { target, client, running: true, done: Promise.resolve() };
    loop.done = this.run(loop);
    this.loops.set(target.address, loop);
  }

  /** Stops calling `address` (its SecretStore was deleted): waits for the call in flight, closes the channel. */
  async remove(address: string): Promise<void> {
    const loop = this.loops.get(address);
    if (loop === undefined) return;
    loop.running = false;
    await loop.done;
    this.loops.delete(address);
    await this.pool?.release(address, { connectTo: loop.target.connectTo });
  }

  /** Holds every loop before its next call, and resolves once no call is in flight (remove() waits for resume()). */
  async pause(): Promise<void> {
    if (this.paused === undefined) {
      let resume!: () => void;
      const resumed = new Promise<void>((r) => (resume = r));
      this.paused = { resumed, resume };
    }
    await Promise.allSettled([...this.inFlight]);
  }

  /** Lets the loops call again. */
  resume(): void {
    this.paused?.resume();
    this.paused = undefined;
  }

  /** Stops every loop, waits for calls in flight, closes the channels and the watcher. */
  async stop(): Promise<void> {
    this.resume();
    await Promise.all([...this.loops.keys()].map((a) => this.remove(a)));
    await this.pool?.close();
    this.watcher.close();
  }

  private async run(loop: Loop): Promise<void> {
    const counts = this.perTarget.get(loop.target.address) ?? { made: 0, failed: 0 };
    this.perTarget.set(loop.target.address, counts);
    while (loop.running) {
      if (this.paused !== undefined) {
        await this.paused.resumed;
        if (!loop.running) break;
      }
      const call = loop.client.getSecret({ remoteRef: { key: DEMO_SECRET_KEY } });
      this.inFlight.add(call);
      try {
        await call;
        this.counts.made++;
        counts.made++;
      } catch (e) {
        this.counts.made++;
        this.counts.failed++;
        counts.made++;
        counts.failed++;
        this.options.onFailure({ target: loop.target, message: (e as ProviderCallError).message ?? String(e) });
      } finally {
        this.inFlight.delete(call);
      }
      if (loop.running) await new Promise((resolve) => setTimeout(resolve, DEMO_SCHEDULE.callIntervalMs));
    }
  }
}
