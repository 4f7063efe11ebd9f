/** The stages of one pod certificate request, in order. */
export type PodStage = 'queueWait' | 'podRead' | 'sign' | 'statusWrite';

/** Samples kept per stage: the latest, so memory stays bounded however long the signer runs. */
const KEPT = 10_000;

/**
 * How long each request spent in each stage (milliseconds, monotonic): waiting in the queue,
 * reading its pod, deciding and signing, writing its status. For benchmarks and tests; the latest
 * 10,000 samples of each stage.
 */
export class PodStageTimes {
  private readonly samples = new Map<PodStage, number[]>();
  private readonly next = new Map<PodStage, number>();

  /** Records one request's time in `stage`. */
  record(stage: PodStage, ms: number): void {
    let kept = this.samples.get(stage);
    if (!kept) this.samples.set(stage, (kept = []));
    const at = this.next.get(stage) ?? 0;
    kept[at % KEPT] = ms;
    this.next.set(stage, at + 1);
  }

  /** The samples of `stage` (in no particular order). */
  of(stage: PodStage): readonly number[] {
    return [...(this.samples.get(stage) ?? [])];
  }

  /** Forgets every sample (a benchmark starting a phase). */
  clear(): void {
    this.samples.clear();
    this.next.clear();
  }
}
