import { describe, expect, it } from '@jest/globals';
import { FAULT_KINDS } from './faults.js';
import { runSoak } from './soak.js';

// The short soak of `npm test`: every fault at least once and a forced overlap CA rotation, over a
// few simulated months. `npm run soak` drives two simulated years (docs/soak.md).
const seed = Number(process.env['SOAK_SEED'] ?? 20261123);

describe('soak (short)', () => {
  it(
    'no call fails but in the windows faults allow, every Secret is valid after each fault, nothing leaks or is lost',
    async () => {
      const report = await runSoak({
        seed,
        days: 100,
        stepDays: { min: 2, max: 5 },
        extraFaultProbability: 0,
        forcedCaRotation: true,
        log: (line) => process.stderr.write(`${line}\n`),
      });
      process.stderr.write(`${JSON.stringify({ ...report, faults: report.faults.length, caEvents: report.caEvents.length }, null, 1)}\n`);
      expect({ seed, problems: report.problems }).toEqual({ seed, problems: [] });
      expect(new Set(report.faults.map((f) => f.kind))).toEqual(new Set(FAULT_KINDS));
      expect(report.caEvents.filter((e) => e.kind === 'prepare' && e.requested).length).toBeGreaterThanOrEqual(1);
      expect(report.calls.made).toBeGreaterThan(1000);
    },
    30 * 60_000,
  );
});
