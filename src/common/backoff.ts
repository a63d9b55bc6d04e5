/**
 * A retry's growing pause: 100 ms, then doubling to at most 1 s (by default), and back to the first
 * after a success. One helper for every retry loop, so that they all back off alike.
 */
export class Backoff {
  private delayMs: number;

  constructor(
    private readonly firstMs = 100,
    private readonly maxMs = 1000,
  ) {
    this.delayMs = firstMs;
  }

  /** The pause to take now; the one after it is twice as long, up to the maximum. */
  next(): number {
    const delayMs = this.delayMs;
    this.delayMs = Math.min(this.delayMs * 2, this.maxMs);
    return delayMs;
  }

  /** After a success: the next failure waits the first pause again. */
  reset(): void {
    this.delayMs = this.firstMs;
  }
}
