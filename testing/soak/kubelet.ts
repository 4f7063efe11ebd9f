import type { CoreV1Api, V1Secret } from '@kubernetes/client-node';
import { type Delivery, KubeletVolume, samePayload } from '@eso-mtls/test-kit/demo';
import type { VolumePayload } from '@eso-mtls/test-kit/demo';

/** One pod's Secret volume: which Secret feeds which folder. */
export interface VolumeMount {
  readonly namespace: string;
  readonly secret: string;
  readonly directory: string;
}

/** Options of {@link KubeletStandIn}. */
export interface KubeletStandInOptions {
  readonly api: CoreV1Api;
  /** Drawn per change: how long a Secret change takes to reach a folder (real milliseconds). */
  readonly deliveryDelay: () => number;
  readonly onDelivery: (mount: VolumeMount, delivery: Delivery) => void;
  readonly onError: (error: Error) => void;
  /** How often the Secrets are read (real milliseconds). */
  readonly pollMs?: number;
}

/** A Secret's data, decoded, as the kubelet writes it into files. */
export function secretPayload(secret: V1Secret): VolumePayload {
  return Object.fromEntries(Object.entries(secret.data ?? {}).map(([k, v]) => [k, Buffer.from(v, 'base64').toString('utf8')]));
}

/**
 * The kubelet, as far as the soak needs it: it reads the mounted Secrets every `pollMs` and hands
 * each change to the folder's {@link KubeletVolume}, which delivers it after a drawn delay with the
 * kubelet's `..data` swap. A deleted Secret leaves the folder as it was; an unreachable apiserver
 * leaves every folder as it was.
 */
export class KubeletStandIn {
  private readonly volumes = new Map<string, { mount: VolumeMount; volume: KubeletVolume }>();
  private timer: NodeJS.Timeout | undefined;
  private polling: Promise<void> = Promise.resolve();

  constructor(private readonly options: KubeletStandInOptions) {}

  /** Mounts `mount` now with the Secret's current content (a pod does not start before its Secret exists). */
  async mount(mount: VolumeMount): Promise<void> {
    const secret = await this.options.api.readNamespacedSecret({ namespace: mount.namespace, name: mount.secret });
    const volume = new KubeletVolume({
      directory: mount.directory,
      deliveryDelay: this.options.deliveryDelay,
      onDelivering: (d) => this.options.onDelivery(mount, d),
      onError: this.options.onError,
    });
    this.volumes.set(mount.directory, { mount, volume });
    await volume.mount(secretPayload(secret));
  }

  /** Unmounts a folder (its pod is gone); the files stay. */
  async unmount(directory: string): Promise<void> {
    const entry = this.volumes.get(directory);
    this.volumes.delete(directory);
    await entry?.volume.close();
  }

  /** The volume of `directory`, for the faults that damage it. */
  volume(directory: string): KubeletVolume {
    const entry = this.volumes.get(directory);
    if (entry === undefined) throw new Error(`no volume is mounted at ${directory}`);
    return entry.volume;
  }

  /** True when every folder holds its Secret's current content (as of the last read), nothing pending. */
  get settled(): boolean {
    return [...this.volumes.values()].every((v) => v.volume.settled);
  }

  /** Starts reading the Secrets every `pollMs`. */
  start(): void {
    const tick = (): void => {
      this.polling = this.poll().finally(() => {
        if (this.timer !== undefined) this.timer = setTimeout(tick, this.options.pollMs ?? 300);
      });
    };
    this.timer = setTimeout(tick, 0);
  }

  /** Waits for a read of every Secret that began after this call. */
  async freshRead(): Promise<void> {
    await this.polling;
    await this.poll();
  }

  /** Stops reading and closes every volume. */
  async stop(): Promise<void> {
    clearTimeout(this.timer);
    this.timer = undefined;
    await this.polling;
    await Promise.all([...this.volumes.values()].map((v) => v.volume.close()));
  }

  private async poll(): Promise<void> {
    const names = new Set([...this.volumes.values()].map((v) => v.mount.secret));
    try {
      for (const name of names) {
        const list = await this.options.api.listSecretForAllNamespaces({ fieldSelector: `metadata.name=${name}` });
        const byNamespace = new Map(list.items.map((s) => [s.metadata!.namespace!, s]));
        for (const { mount, volume } of this.volumes.values()) {
          if (mount.secret !== name) continue;
          const secret = byNamespace.get(mount.namespace);
          if (secret === undefined) continue; // deleted: the folder keeps what it has
          const payload = secretPayload(secret);
          if (!samePayload(payload, volume.secretContent)) volume.secretChanged(payload);
        }
      }
    } catch {
      // The apiserver is down or restarting: folders keep what they hold, as on a real node.
    }
  }
}
