// The test kit's replay of scrapes through promtool and the shipped alert rules: an alert that
// fired at any minute of the replay and cleared before its end is still reported.
import { describe, expect, it } from '@jest/globals';
import { ScrapeRecorder } from '@eso-mtls/test-kit/scrapes';

const DAY = 86_400;

/** A controller's exposition with the active CA expiring in `days`. */
const controller = (days: number) => `# TYPE eso_ca_certificate_expiry_seconds gauge\neso_ca_certificate_expiry_seconds{state="active"} ${days * DAY}\n`;

/** Scrapes `perMinute` (one exposition text a minute) into a recorder. */
async function replayed(perMinute: readonly string[]): Promise<ScrapeRecorder> {
  let minute = 0;
  const scrapes = new ScrapeRecorder({ metrics: async () => perMinute[minute++]! });
  for (let i = 0; i < perMinute.length; i++) await scrapes.scrape();
  return scrapes;
}

describe('ScrapeRecorder', () => {
  it('passes a replay in which no alert ever fires', async () => {
    const r = (await replayed(Array(20).fill(controller(300)))).expectNoneFiring();
    expect([r.status, r.stdout + r.stderr]).toEqual([0, expect.stringContaining('SUCCESS')]);
  });

  it('fails a replay in which an alert fired and cleared before its end', async () => {
    // EsoCaCertificateExpiringSoon (for: 15m) fires at minute 15; the CA is renewed at minute 17.
    const scrapes = await replayed([...Array(17).fill(controller(20)), ...Array(4).fill(controller(365))]);
    expect(scrapes.expectFiring('EsoCaCertificateExpiringSoon', [])).toMatchObject({ status: 0 });
    const r = scrapes.expectNoneFiring();
    expect(r.status).not.toBe(0);
    expect(r.stdout + r.stderr).toContain('EsoCaCertificateExpiringSoon');
  });
});
