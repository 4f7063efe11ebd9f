// The soak's ESO side, as a process the soak runs under libfaketime: ESO core's reloading client
// (the demo's EsoCaller, from source) calling GetSecret on every provider continuously, with
// retries off, on several connections per provider (one channel pool per connection).
//
// stdin, one JSON object per line: {"add": CallTarget} | {"remove": address} | {"report": id} |
// {"pause": id} (no new calls; answered once none is in flight) | {"resume": true}
// stdout, one JSON object per line: {"failure": {address, message}} at once for each failed call;
// {"report": id, made, failed, reloads, refused, serial, bundle} in answer to a report request.
import { X509Certificate } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import type { TlsMaterialPems } from '@eso-mtls/grpc';
import { type CallTarget, EsoCaller } from '@eso-mtls/test-kit/demo';
import { bundleHash } from './bundle-hash.js';

const [directory, connectionsText] = process.argv.slice(2);
if (directory === undefined) {
  process.stderr.write('usage: eso-client.child.ts <client certificate folder> [connections per provider]\n');
  process.exit(2);
}
const connections = Number(connectionsText ?? '2');
const send = (message: object): void => {
  process.stdout.write(`${JSON.stringify(message)}\n`);
};

let current: { serial: string; bundle: string } = {
  serial: new X509Certificate(readFileSync(join(directory, 'tls.crt'))).serialNumber.toLowerCase(),
  bundle: bundleHash(readFileSync(join(directory, 'ca.crt'), 'utf8')),
};
const reloaded = (m: TlsMaterialPems & { serialNumber: string }): void => {
  current = { serial: m.serialNumber, bundle: bundleHash(m.caBundle) };
};
const callers = Array.from(
  { length: connections },
  (_, i) =>
    new EsoCaller({
      directory,
      onFailure: (f) => send({ failure: { address: f.target.address, message: f.message } }),
      // Every caller watches the same folder; the first one's view is the process's.
      onReload: (material) => i === 0 && reloaded(material),
      onReloadRefused: () => undefined,
    }),
);
for (const c of callers) await c.start();
send({ started: true, ...current });

createInterface({ input: process.stdin }).on('line', (line) => {
  const request = JSON.parse(line) as { add?: CallTarget; remove?: string; report?: number; pause?: number; resume?: boolean };
  if (request.pause !== undefined) {
    const id = request.pause;
    void Promise.all(callers.map((c) => c.pause())).then(() => send({ paused: id }));
  }
  if (request.resume) for (const c of callers) c.resume();
  if (request.add) for (const c of callers) c.add(request.add);
  if (request.remove !== undefined) {
    const address = request.remove;
    void Promise.all(callers.map((c) => c.remove(address))).then(() => send({ removed: address }));
  }
  if (request.report !== undefined) {
    const calls = callers.map((c) => c.calls);
    const reloads = callers[0]!.reloads;
    send({
      report: request.report,
      made: calls.reduce((n, c) => n + c.made, 0),
      failed: calls.reduce((n, c) => n + c.failed, 0),
      reloads: reloads.reloads,
      refused: reloads.refused,
      ...current,
    });
  }
});
process.once('SIGTERM', () => {
  void Promise.all(callers.map((c) => c.stop())).then(() => process.exit(0));
});
