import type { GeneratedKey, Signer } from '../crypto/crypto.js';
import type { KeyAlgorithm } from '../policy/policy.js';

/** Real leaf keys the simulator reused: a simulation judges times and phases, not key secrecy. */
export interface LeafKeyPoolReport {
  /** True when leaves shared a pool of keys; false when every leaf got a fresh key (`freshLeafKeys`). */
  readonly pooled: boolean;
  /** Keys in the pool, per algorithm (0 when not pooled). */
  readonly poolSize: number;
  /** Real key pairs generated for leaves. */
  readonly generated: number;
  /** Leaf keys handed out: one per leaf issued. */
  readonly handedOut: number;
}

/** Default pool size: enough that a renewed leaf gets a key other than its predecessor's. */
export const DEFAULT_LEAF_KEY_POOL_SIZE = 4;

/**
 * Hands out leaf keys from `signer`: the first `size` per algorithm are generated, then they are
 * reused in turn, so years of RSA leaves cost a few real key generations instead of thousands.
 */
export class LeafKeyPool implements Pick<Signer, 'generateKey'> {
  // Promises, so that leaves issued concurrently while the pool fills do not each generate a key.
  private readonly pools = new Map<KeyAlgorithm, Promise<GeneratedKey>[]>();
  private generated = 0;
  private handedOut = 0;

  constructor(
    private readonly signer: Pick<Signer, 'generateKey'>,
    private readonly size: number = DEFAULT_LEAF_KEY_POOL_SIZE,
  ) {
    if (!Number.isInteger(size) || size < 1) throw new RangeError(`leaf key pool size ${size} must be a whole number >= 1`);
  }

  /** The next key of the pool for `algorithm`, generated while the pool is not full. */
  generateKey(algorithm: KeyAlgorithm): Promise<GeneratedKey> {
    const pool = this.pools.get(algorithm) ?? [];
    this.pools.set(algorithm, pool);
    const turn = this.handedOut++;
    if (pool.length < this.size) {
      this.generated++;
      pool.push(this.signer.generateKey(algorithm));
      return pool[pool.length - 1]!;
    }
    return pool[turn % this.size]!;
  }

  /** What the pool did, for the simulation's summary. */
  report(): LeafKeyPoolReport {
    return { pooled: true, poolSize: this.size, generated: this.generated, handedOut: this.handedOut };
  }
}
