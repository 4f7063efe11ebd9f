/**
 * Polls `check` until it returns something other than `false` without throwing, and resolves with
 * that value: assertions (`() => expect(...)...`), predicates and probes all fit. After `timeoutMs`
 * it fails with the check's last error, or says it timed out waiting for `what`. Watches, reloads
 * and controllers act asynchronously; the bound is generous because tests run on a loaded machine.
 * Looks come quickly at first, then every 250 ms, so a long wait does not hammer the apiserver;
 * `intervalMs` fixes the pause instead (a test that counts its looks, or must look at once).
 */
export async function eventually<T>(check: () => Promise<T> | T, timeoutMs = 20_000, what = 'the condition', intervalMs?: number): Promise<Exclude<T, false>> {
  const deadline = Date.now() + timeoutMs;
  for (let pause = intervalMs ?? 20; ; pause = intervalMs ?? Math.min(pause * 2, 250)) {
    let last: unknown;
    try {
      const value = await check();
      if (value !== false) return value as Exclude<T, false>;
      last = new Error(`timed out after ${timeoutMs}ms waiting for ${what}`);
    } catch (e) {
      last = e;
    }
    // Checked after the attempt, so a slow check still gets its try within a short bound.
    if (Date.now() >= deadline) throw last instanceof Error ? last : new Error(String(last));
    await new Promise((resolve) => setTimeout(resolve, pause));
  }
}
