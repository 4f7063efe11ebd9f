// Test-only entry: `eso-mtls controller` from packages/controller/dist, with no TypeScript loader in
// memory (so its RSS is the shipped controller's), and its certificate clock shifted by
// FLOOD_TEST_CLOCK_OFFSET_MS for the life of the process; leader election and timers keep the real
// clocks. A line "rounds" on stdin is answered on stderr with {"rounds":N}, the reconciles run so
// far. Production has no way to shift the clock.
//
//   FLOOD_TEST_CLOCK_OFFSET_MS=<ms> node packages/controller/test/support/shifted-controller.child.mjs [controller flags]
import { createInterface } from 'node:readline';
import { runControllerCommand } from '@eso-mtls/controller';

const offsetMs = Number(process.env.FLOOD_TEST_CLOCK_OFFSET_MS ?? '0');
if (!Number.isFinite(offsetMs)) throw new Error(`FLOOD_TEST_CLOCK_OFFSET_MS is not a number: ${process.env.FLOOD_TEST_CLOCK_OFFSET_MS}`);
let controller;
createInterface({ input: process.stdin }).on('line', (line) => {
  if (line === 'rounds') process.stderr.write(`${JSON.stringify({ rounds: controller?.adapter.rounds ?? 0 })}\n`);
});
const code = await runControllerCommand(process.argv.slice(2), process.env, undefined, {
  now: () => Date.now() + offsetMs,
  onStarted: (c) => {
    controller = c;
  },
});
process.exit(code);
