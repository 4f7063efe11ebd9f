/** A clock tests move by hand (client-go's fake clock): no sleeping for 90 days. */
export class TestClock {
  constructor(private t: number = Date.now()) {}
  /** The clock's time, in ms since the epoch; pass it where code takes `now`. */
  readonly now = (): number => this.t;
  advance(ms: number): void {
    this.t += ms;
  }
  set(t: number): void {
    this.t = t;
  }
}
