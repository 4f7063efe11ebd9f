// Child process of kubelet-probe.ts: probes like the kubelet, away from the test's own event loop.
// argv: <url> <periodMs> <timeoutMs> <phases>. Prints every probe as one JSON line; stops on stdin end.
const [url, periodMs, timeoutMs, phases] = [process.argv[2]!, ...process.argv.slice(3, 6).map(Number)] as [string, number, number, number];
let stopping = false;
const sent = new Map<number, number>();

async function probe(phase: number): Promise<void> {
  const seq = (sent.get(phase) ?? 0) + 1;
  sent.set(phase, seq);
  const at = performance.now();
  let status = 0;
  try {
    // Waits past the timeout to learn the real latency; the verdict uses the timeout.
    const res = await fetch(url, { signal: AbortSignal.timeout(30_000) });
    await res.text();
    status = res.status;
  } catch {
    // refused or aborted: status 0
  }
  const ms = performance.now() - at;
  const ok = status >= 200 && status < 400 && ms <= timeoutMs;
  process.stdout.write(`${JSON.stringify({ phase, seq, ms: Math.round(ms), status, ok })}\n`);
}

const timers: NodeJS.Timeout[] = [];
for (let phase = 0; phase < phases; phase++) {
  // As the kubelet: one probe every period, whether or not the last one has answered.
  timers.push(
    setTimeout(
      () => {
        if (stopping) return;
        void probe(phase);
        timers.push(setInterval(() => void probe(phase), periodMs));
      },
      (phase * periodMs) / phases,
    ),
  );
}
process.stdin.resume();
process.stdin.on('end', () => {
  stopping = true;
  for (const t of timers) clearInterval(t);
});
