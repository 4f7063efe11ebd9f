import {
  CertificateCache,
  type CryptoBackend,
  type Instant,
  type MemoryStore,
  type Plan,
  type Policy,
  type SecretWrite,
  StoreConflictError,
  executePlan,
  isPlanEmpty,
  planRotation,
} from '@eso-mtls/core';
import { planContext } from '@eso-mtls/kubernetes';

/** What one reconcile did: the plan, and the writes the store accepted, in write order. */
export interface ReconcileOutcome {
  readonly plan: Plan;
  readonly written: readonly SecretWrite[];
  /** Writes the store refused because the Secret moved on since the plan (a re-plan follows). */
  readonly stale: number;
}

/** Options of {@link ReconcileLoop}. */
export interface ReconcileLoopOptions {
  readonly store: MemoryStore;
  readonly policy: Policy;
  readonly crypto: CryptoBackend;
  readonly cache: CertificateCache;
  /** The wall clock: plans and certificates use real time. */
  readonly now: () => Instant;
  /** Told about every reconcile that planned something (or a write that was refused). */
  readonly onReconcile: (outcome: ReconcileOutcome) => void;
  /** Told about every plan, empty or not (the metrics view reads it). */
  readonly onPlan?: (plan: Plan) => void;
  /** Told when planning or issuing failed; the loop retries after a second. */
  readonly onError: (error: Error) => void;
}

// After a round that wrote, the controller's informers see its own writes and it plans again;
// more rounds than this in a row means something keeps changing under it, so it backs off.
const MAX_ROUNDS_IN_A_ROW = 5;
const RETRY_MS = 1000;
// Wake a little after an instant is due, never just before it.
const WAKE_MARGIN_MS = 20;

/**
 * The controller's loop over an in-memory cluster: plan with the core's {@link planRotation},
 * materialise with {@link executePlan} (the functions the Kubernetes adapter calls), apply the
 * writes with the API's optimistic concurrency (CA first; nothing it signed is applied if it is
 * refused), then sleep until the plan's next due instant, the reconcile interval, or a
 * {@link poke} from a change in the cluster, whichever comes first.
 */
export class ReconcileLoop {
  private timer: NodeJS.Timeout | undefined;
  private running: Promise<void> | undefined;
  private again = false;
  private stopped = false;

  constructor(private readonly options: ReconcileLoopOptions) {}

  /** Something in the cluster changed (what an informer event is to the controller): reconcile now. */
  poke(): void {
    if (this.stopped) return;
    if (this.running) {
      this.again = true;
      return;
    }
    clearTimeout(this.timer);
    this.running = this.rounds().finally(() => (this.running = undefined));
  }

  /** Reconciles until nothing is left to do now. Resolves when done (for the start-up issuance). */
  async settle(): Promise<void> {
    this.poke();
    while (this.running) await this.running;
  }

  /** Stops scheduling and waits for a round in progress. */
  async stop(): Promise<void> {
    this.stopped = true;
    clearTimeout(this.timer);
    await this.running;
  }

  private async rounds(): Promise<void> {
    let nextDueAt: Instant | undefined;
    let retry = false;
    for (let round = 0; !this.stopped; round++) {
      this.again = false;
      let outcome: ReconcileOutcome;
      try {
        outcome = await this.reconcile();
      } catch (e) {
        this.options.onError(e as Error);
        retry = true;
        break;
      }
      nextDueAt = outcome.plan.nextDueAt;
      const acted = outcome.written.length > 0 || outcome.stale > 0;
      if (!acted && !this.again) break;
      if (round + 1 >= MAX_ROUNDS_IN_A_ROW) {
        retry = true;
        break;
      }
    }
    if (this.stopped) return;
    const now = this.options.now();
    const untilDue = nextDueAt === undefined ? Infinity : nextDueAt - now + WAKE_MARGIN_MS;
    const wait = retry ? RETRY_MS : Math.max(WAKE_MARGIN_MS, Math.min(untilDue, this.options.policy.reconcileInterval));
    this.timer = setTimeout(() => this.poke(), wait);
  }

  private async reconcile(): Promise<ReconcileOutcome> {
    const { store, policy, cache, crypto } = this.options;
    const plan = planRotation(store.snapshot(), planContext({ policy }, this.options.now(), cache));
    this.options.onPlan?.(plan);
    if (isPlanEmpty(plan)) return { plan, written: [], stale: 0 };
    const writes = await executePlan(plan, { crypto, cache, now: this.options.now() });
    const written: SecretWrite[] = [];
    let stale = 0;
    for (const write of writes) {
      try {
        store.apply(write);
        written.push(write);
      } catch (e) {
        if (!(e instanceof StoreConflictError)) throw e;
        stale++;
        // Leaves signed by a CA that is not stored would be trusted by nobody.
        if (write.kind === 'ca') break;
      }
    }
    const outcome = { plan, written, stale };
    this.options.onReconcile(outcome);
    return outcome;
  }
}
