import type * as grpc from '@grpc/grpc-js';
import { ProviderChannel, type ClientMaterialSource } from './client-channel.js';
import type { TlsMaterial } from './material.js';

/** Options of {@link ProviderChannelPool}. */
export interface ProviderChannelPoolOptions {
  /** ESO's client material: a watcher over the mounted client Secret or pod-certificate folder, or fixed material. */
  readonly material: ClientMaterialSource;
  /** grpc-js options for every channel. */
  readonly channelOptions?: grpc.ChannelOptions;
  /** How long a replaced channel may wait for its calls before it is closed anyway (see {@link ProviderChannelOptions}). */
  readonly drainTimeoutMs?: number;
}

/**
 * One {@link ProviderChannel} per provider address, all presenting the same client material.
 * With a watcher, every channel switches to rotated material by itself; with fixed material,
 * {@link updateMaterial} switches them all.
 */
export class ProviderChannelPool {
  private readonly channels = new Map<string, ProviderChannel>();
  private material: ClientMaterialSource;
  private closed = false;

  constructor(private readonly options: ProviderChannelPoolOptions) {
    this.material = options.material;
  }

  /** The channel for `address` (`<service>.<namespace>.svc:<port>`), created on first use. */
  channel(address: string, options: { readonly connectTo?: string } = {}): ProviderChannel {
    if (this.closed) throw new Error('provider channel pool is closed');
    const key = `${address}\u0000${options.connectTo ?? ''}`;
    let channel = this.channels.get(key);
    if (channel === undefined) {
      channel = new ProviderChannel({
        address,
        connectTo: options.connectTo,
        material: this.material,
        channelOptions: this.options.channelOptions,
        drainTimeoutMs: this.options.drainTimeoutMs,
      });
      this.channels.set(key, channel);
    }
    return channel;
  }

  /** Hands every channel new fixed material (user-supplied PEMs that changed). */
  updateMaterial(material: TlsMaterial): void {
    this.material = material;
    for (const c of this.channels.values()) c.updateMaterial(material);
  }

  /** Closes `address`'s channel once its calls finish (its provider went away). */
  async release(address: string, options: { readonly connectTo?: string } = {}): Promise<void> {
    const key = `${address}\u0000${options.connectTo ?? ''}`;
    const channel = this.channels.get(key);
    this.channels.delete(key);
    await channel?.close();
  }

  /** Closes every channel once its calls finish. */
  async close(): Promise<void> {
    this.closed = true;
    await Promise.all([...this.channels.values()].map((c) => c.close()));
    this.channels.clear();
  }
}
