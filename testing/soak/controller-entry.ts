// Test-only entry of the soak: `eso-mtls controller` from packages/controller/dist, with the real
// clock plus the soak's moving offset as its certificate clock. Leader election, leases and timers
// keep the real clocks. The offset is the file libfaketime reads for the providers and the client
// (ESO_MTLS_SOAK_OFFSET_FILE); when it moves, the controller is asked for a reconcile, as its
// resync timer would do after that much time. Production has no flag for any of this.
//
//   node --import ./scripts/register-ts.mjs testing/soak/controller-entry.ts [controller flags]
import { readFileSync } from 'node:fs';
import { type RunningController, runControllerCommand } from '@eso-mtls/controller';
import { parseOffsetFile } from '../faketime/faketime.js';

const file = process.env['ESO_MTLS_SOAK_OFFSET_FILE'];
if (file === undefined) {
  process.stderr.write('controller-entry: set ESO_MTLS_SOAK_OFFSET_FILE to the soak offset file\n');
  process.exit(2);
}
const read = (): number => parseOffsetFile(readFileSync(file, 'utf8'));
let offsetMs = read();
let controller: RunningController | undefined;
setInterval(() => {
  let next: number;
  try {
    next = read();
  } catch {
    return; // mid-rename; the next poll reads it
  }
  if (next === offsetMs) return;
  offsetMs = next;
  controller?.adapter.requestReconcile();
}, 100).unref();

const code = await runControllerCommand(process.argv.slice(2), process.env, undefined, {
  now: () => Date.now() + offsetMs,
  onStarted: (c) => {
    controller = c;
  },
});
process.exit(code);
