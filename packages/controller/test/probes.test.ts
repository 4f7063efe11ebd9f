import { afterEach, describe, expect, it } from '@jest/globals';
import { type ProbeServer, PROBE_PATHS, pingCheck, startProbeServer } from '../src/index.js';

async function get(url: string, method = 'GET'): Promise<{ status: number; body: string }> {
  const res = await fetch(url, { method });
  return { status: res.status, body: await res.text() };
}

describe('probe server', () => {
  let server: ProbeServer | undefined;
  afterEach(async () => {
    await server?.close();
  });

  it('serves /healthz and /readyz from their checks, in the apiserver format', async () => {
    let synced = false;
    server = await startProbeServer({
      host: '127.0.0.1',
      port: 0,
      liveness: [pingCheck],
      readiness: [
        { name: 'informers', check: () => (synced ? undefined : 'caches not synced') },
        { name: 'leader-election', check: () => undefined },
      ],
    });
    expect(await get(server.url + PROBE_PATHS.liveness)).toEqual({ status: 200, body: 'ok' });
    expect(await get(server.url + PROBE_PATHS.readiness)).toEqual({
      status: 500,
      body: '[-]informers failed: caches not synced\n[+]leader-election ok\nreadyz check failed\n',
    });
    expect((await get(`${server.url}/readyz/leader-election`)).status).toBe(200);
    expect((await get(`${server.url}/readyz/informers`)).status).toBe(500);
    synced = true;
    expect(await get(server.url + PROBE_PATHS.readiness)).toEqual({ status: 200, body: 'ok' });
    expect((await get(`${server.url}/readyz?verbose`)).body).toBe('[+]informers ok\n[+]leader-election ok\nreadyz check passed\n');
  });

  it('reports a throwing check as failed instead of crashing', async () => {
    server = await startProbeServer({
      host: '127.0.0.1',
      port: 0,
      liveness: [
        {
          name: 'bad',
          check: () => {
            throw new Error('boom');
          },
        },
      ],
      readiness: [],
    });
    expect(await get(`${server.url}/healthz`)).toEqual({ status: 500, body: '[-]bad failed: check threw: boom\nhealthz check failed\n' });
  });

  it('answers 404 for other paths and unknown checks, 405 for other methods', async () => {
    server = await startProbeServer({ host: '127.0.0.1', port: 0, liveness: [pingCheck], readiness: [] });
    expect((await get(`${server.url}/metrics`)).status).toBe(404);
    expect((await get(`${server.url}/healthz/nope`)).status).toBe(404);
    expect((await get(`${server.url}/healthz`, 'POST')).status).toBe(405);
    expect((await get(`${server.url}/healthz`, 'HEAD')).status).toBe(200);
  });

  it('fails clearly when the port is taken', async () => {
    server = await startProbeServer({ host: '127.0.0.1', port: 0, liveness: [pingCheck], readiness: [] });
    await expect(startProbeServer({ host: '127.0.0.1', port: server.port, liveness: [], readiness: [] })).rejects.toThrow(
      `probe server cannot listen on 127.0.0.1:${server.port}: listen EADDRINUSE`,
    );
  });
});
