/** Retries `probe` until it stops throwing, rethrowing its last error after `timeoutMs`: reloads and starts are asynchronous. */
export async function eventually<T>(probe: () => Promise<T>, timeoutMs = 10_000): Promise<T> {
  const until = Date.now() + timeoutMs;
  for (;;) {
    try {
      return await probe();
    } catch (e) {
      if (Date.now() > until) throw e;
      await new Promise((r) => setTimeout(r, 20));
    }
  }
}
