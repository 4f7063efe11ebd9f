import { describe, expect, it } from '@jest/globals';
import { WatchError } from '../src/index.js';
import { type WatchInput, type WatchState, endedAtOnce, nextWatchState, watching } from '../src/informers/watch-state.js';

const run = (inputs: WatchInput[], from: WatchState = watching(1000)): WatchState => inputs.reduce(nextWatchState, from);
const change: WatchInput = { on: 'change' };
const gone: WatchInput = { on: 'error-event', status: { code: 410, reason: 'Expired', message: 'too old resource version' } };
const internal: WatchInput = { on: 'error-event', status: { code: 500, reason: 'InternalError', message: 'etcd timed out' } };
const close = (atMs: number, error?: unknown, stopping = false): WatchInput => ({ on: 'close', atMs, error, stopping });

describe('the life of one watch', () => {
  it('counts changes while watching, and ends with how long it ran when the stream closes cleanly', () => {
    expect(run([change, change, close(4000)])).toEqual({ phase: 'ended', ranMs: 3000, changes: 2 });
  });

  it('ends, not fails, when the stream broke because we stopped it', () => {
    expect(run([close(1000, new Error('watch /api/v1/secrets: aborted'), true)])).toEqual({ phase: 'ended', ranMs: 0, changes: 0 });
  });

  it('expires on a 410, as an ERROR event or as the status of the close', () => {
    expect(run([gone])).toEqual({ phase: 'expired' });
    expect(run([close(1000, Object.assign(new Error('Gone'), { statusCode: 410 }))])).toEqual({ phase: 'expired' });
  });

  it('fails on any other ERROR event, with its code, reason and message', () => {
    const end = run([internal, close(2000, new Error('aborted'))]);
    if (end.phase !== 'failed') throw new Error(`expected failed, got ${end.phase}`);
    const error = end.error as WatchError;
    expect(error).toBeInstanceOf(WatchError);
    expect(error.code).toBe(500);
    expect(error.message).toBe('watch ERROR event: 500 InternalError etcd timed out');
    expect(run([{ on: 'error-event', status: {} }])).toMatchObject({ error: { message: 'watch ERROR event: ?', code: undefined } });
  });

  it('fails on a broken stream, with the error it broke with', () => {
    const broken = new Error('watch /api/v1/secrets: connection closed');
    expect(run([change, close(2000, broken)])).toEqual({ phase: 'failed', error: broken });
    expect(run([close(2000, 'ECONNRESET')])).toMatchObject({ phase: 'failed', error: { message: 'ECONNRESET' } });
  });

  it("keeps an ERROR event's verdict through the close that follows it, even a clean one", () => {
    expect(run([gone, close(2000, new Error('aborted'))])).toEqual({ phase: 'expired' });
    expect(run([internal, close(2000)])).toMatchObject({ phase: 'failed', error: { code: 500 } });
  });

  it('lets a 410 win over any other error, since only a relist helps; of other errors, the last counts', () => {
    expect(run([internal, gone])).toEqual({ phase: 'expired' });
    expect(run([gone, internal])).toEqual({ phase: 'expired' });
    const other: WatchInput = { on: 'error-event', status: { code: 429, reason: 'TooManyRequests' } };
    expect(run([internal, other])).toMatchObject({ phase: 'failed', error: { code: 429 } });
  });

  it('ignores anything after a clean close', () => {
    const ended = run([change, close(1500)]);
    expect(run([change, gone, close(9000, new Error('late'))], ended)).toBe(ended);
  });

  it('calls a watch that closed in under a second, having seen nothing, one to back off from', () => {
    expect(endedAtOnce(run([close(1999)]))).toBe(true);
    expect(endedAtOnce(run([close(2000)]))).toBe(false);
    expect(endedAtOnce(run([change, close(1001)]))).toBe(false);
    expect(endedAtOnce(run([gone]))).toBe(false);
    expect(endedAtOnce(run([internal]))).toBe(false);
  });
});
