import { seededRandom } from '@eso-mtls/core';

/** The soak's one source of chance, from the core's seeded generator: a printed seed replays a run. */
export class SeededRandom {
  private readonly bytes: (length: number) => Uint8Array;

  constructor(readonly seed: number) {
    this.bytes = seededRandom(seed);
  }

  /** Uniform in [0, 1). */
  fraction(): number {
    const b = this.bytes(4);
    return (((b[0]! | (b[1]! << 8) | (b[2]! << 16)) >>> 0) + b[3]! * 2 ** 24) / 2 ** 32;
  }

  /** Uniform in [min, max). */
  between(min: number, max: number): number {
    return min + (max - min) * this.fraction();
  }

  /** One element of a non-empty list. */
  pick<T>(items: readonly T[]): T {
    return items[Math.floor(this.fraction() * items.length)]!;
  }

  /** A shuffled copy. */
  shuffle<T>(items: readonly T[]): T[] {
    const out = [...items];
    for (let i = out.length - 1; i > 0; i--) {
      const j = Math.floor(this.fraction() * (i + 1));
      [out[i], out[j]] = [out[j]!, out[i]!];
    }
    return out;
  }

  /** `length` random bytes. */
  garbage(length: number): Buffer {
    return Buffer.from(this.bytes(length));
  }
}
