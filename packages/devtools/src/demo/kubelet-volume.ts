import { type VolumePayload, writeAtomically } from './atomic-writer.js';

/** Why a folder was written. */
export type DeliveryKind = 'mount' | 'update' | 'damage' | 'resync';

/** One `..data` swap in a folder. */
export interface Delivery {
  readonly directory: string;
  readonly kind: DeliveryKind;
  /** For an update: how long after the Secret changed its content reached the folder. */
  readonly delayMs?: number;
  readonly payload: VolumePayload;
}

/** Options of {@link KubeletVolume}. */
export interface KubeletVolumeOptions {
  readonly directory: string;
  /** The delivery delay of one change, drawn per change (the kubelet's sync period and cache). */
  readonly deliveryDelay: () => number;
  /** Told as each swap begins: a watcher on the folder may see the new content before the write resolves. */
  readonly onDelivering?: (delivery: Delivery) => void;
  /** Told when writing the folder failed; the next change or resync tries again. */
  readonly onError: (error: Error) => void;
}

/**
 * One pod's mounted Secret, kept the way the kubelet keeps it: a change to the Secret reaches the
 * folder after a delivery delay, and a change made before that lands in the same delivery (the
 * kubelet writes what the Secret holds when it syncs, not every version). A deleted Secret leaves
 * the folder as it is. Writes to one folder never overlap.
 */
export class KubeletVolume {
  readonly directory: string;
  /** What the Secret holds now, as far as this volume was told. */
  private desired: VolumePayload | undefined;
  /** What the folder holds now (undefined before the first write). */
  private onDisk: VolumePayload | undefined;
  private pending: { timer: NodeJS.Timeout; changedAt: number } | undefined;
  private writes: Promise<void> = Promise.resolve();
  private closed = false;

  constructor(private readonly options: KubeletVolumeOptions) {
    this.directory = options.directory;
  }

  /** Mounts the Secret's current content now: a pod does not start before its Secret exists. */
  mount(payload: VolumePayload): Promise<void> {
    this.desired = payload;
    return this.write(payload, 'mount');
  }

  /** The Secret changed in the API: its content reaches the folder after the delivery delay. */
  secretChanged(payload: VolumePayload): void {
    this.desired = payload;
    if (this.pending !== undefined || this.closed) return;
    const delayMs = Math.max(0, Math.round(this.options.deliveryDelay()));
    const changedAt = performance.now();
    const timer = setTimeout(() => {
      this.pending = undefined;
      void this.write(this.desired!, 'update', Math.round(performance.now() - changedAt));
    }, delayMs);
    this.pending = { timer, changedAt };
  }

  /** Swaps in damaged files (a bad disk, a hand edit in the node): what the provider must refuse. */
  damage(payload: VolumePayload): Promise<void> {
    return this.write(payload, 'damage');
  }

  /** The kubelet's periodic sync: writes what the Secret holds if the folder differs. Resolves true if it wrote. */
  async resync(): Promise<boolean> {
    await this.writes;
    const desired = this.desired;
    if (desired === undefined || samePayload(desired, this.onDisk)) return false;
    await this.write(desired, 'resync');
    return true;
  }

  /** What the Secret holds now, as this volume knows it. */
  get secretContent(): VolumePayload | undefined {
    return this.desired;
  }

  /** True when the folder holds what the Secret holds, with no delivery pending or in progress. */
  get settled(): boolean {
    return this.pending === undefined && this.desired !== undefined && samePayload(this.desired, this.onDisk);
  }

  /** Drops a pending delivery and waits for a write in progress. */
  async close(): Promise<void> {
    this.closed = true;
    if (this.pending !== undefined) clearTimeout(this.pending.timer);
    this.pending = undefined;
    await this.writes;
  }

  private write(payload: VolumePayload, kind: DeliveryKind, delayMs?: number): Promise<void> {
    const run = async (): Promise<void> => {
      if (this.closed && kind !== 'mount') return;
      try {
        this.options.onDelivering?.({ directory: this.directory, kind, payload, ...(delayMs === undefined ? {} : { delayMs }) });
        await writeAtomically(this.directory, payload);
        this.onDisk = payload;
      } catch (e) {
        this.options.onError(new Error(`writing ${this.directory} (${kind}) failed: ${(e as Error).message}`, { cause: e }));
      }
    };
    this.writes = this.writes.then(run);
    return this.writes;
  }
}

/** Whether two versions of a mounted Secret hold the same files with the same content. */
export function samePayload(a: VolumePayload, b: VolumePayload | undefined): boolean {
  if (b === undefined) return false;
  const keys = Object.keys(a);
  return keys.length === Object.keys(b).length && keys.every((k) => a[k] === b[k]);
}
