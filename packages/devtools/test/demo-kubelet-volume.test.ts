import { mkdtemp, readFile, readdir, readlink, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from '@jest/globals';
import { eventually } from '@eso-mtls/test-kit/eventually';
import { type Delivery, KubeletVolume } from '../src/demo/kubelet-volume.js';

// Long enough that reading the folder right after a change never races the delivery.
const DELAY_MS = 1000;

const payload = (n: number): Record<string, string> => ({ 'tls.crt': `crt ${n}`, 'tls.key': `key ${n}`, 'ca.crt': `ca ${n}` });

describe("the demo's kubelet volume", () => {
  let dir: string;
  let deliveries: Delivery[];
  let errors: Error[];
  let volume: KubeletVolume;
  beforeEach(async () => {
    dir = await mkdtemp(join(tmpdir(), 'kubelet-volume-'));
    deliveries = [];
    errors = [];
    volume = new KubeletVolume({ directory: dir, deliveryDelay: () => DELAY_MS, onDelivering: (d) => deliveries.push(d), onError: (e) => errors.push(e) });
  });
  afterEach(async () => {
    await volume.close();
    await rm(dir, { recursive: true, force: true });
  });

  const read = (name: string) => readFile(join(dir, name), 'utf8');
  const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
  /** Waits (within a generous bound, for a loaded machine) until tls.crt reads `expected`. */
  const delivered = (expected: string) => eventually(async () => expect(await read('tls.crt')).toBe(expected), 20_000, `tls.crt to read ${expected}`);

  it('mounts at once through ..data, and delivers changes made before a delivery as one swap of the latest content', async () => {
    await volume.mount(payload(1));
    expect(await readlink(join(dir, '..data'))).toMatch(/^\.\.\d{4}_\d{2}_\d{2}_\d{2}_\d{2}_\d{2}\.\w+$/);
    expect(await readlink(join(dir, 'tls.crt'))).toBe(join('..data', 'tls.crt'));
    volume.secretChanged(payload(2));
    volume.secretChanged(payload(3));
    expect(await read('tls.crt')).toBe('crt 1'); // not before the delivery delay
    await delivered('crt 3');
    expect(deliveries.map((d) => d.kind)).toEqual(['mount', 'update']);
    expect(deliveries[1]!.delayMs).toBeGreaterThanOrEqual(DELAY_MS - 1);
    // One timestamped folder is left: the old one is removed after the swap (a moment after the
    // new content becomes readable, so wait for it within the same bound on a loaded machine).
    const folders = async () => (await readdir(dir)).filter((n) => n.startsWith('..') && n !== '..data');
    await eventually(async () => expect(await folders()).toHaveLength(1), 20_000, 'the old folder to be removed');
    expect(errors).toEqual([]);
  });

  it('a damaged folder stays until the periodic sync writes the Secret back; a sync with nothing to repair writes nothing', async () => {
    await volume.mount(payload(1));
    await volume.damage({ ...payload(1), 'tls.crt': 'cr' });
    expect(await read('tls.crt')).toBe('cr');
    expect(await volume.resync()).toBe(true);
    expect(await read('tls.crt')).toBe('crt 1');
    expect(await volume.resync()).toBe(false);
    expect(deliveries.map((d) => d.kind)).toEqual(['mount', 'damage', 'resync']);
  });

  it('drops a pending delivery on close', async () => {
    await volume.mount(payload(1));
    volume.secretChanged(payload(2));
    await volume.close();
    await sleep(DELAY_MS + 200);
    expect(await read('tls.crt')).toBe('crt 1');
  });
});
