import { connect, createServer, type Server } from 'node:net';
import { afterEach, describe, expect, it } from '@jest/globals';
import { Gauge, Registry } from 'prom-client';
import { createServer as createHttpServer } from 'node:http';
import { createMetricsHandler, METRICS_PATH, startMetricsServer, type MetricsServer } from '@eso-mtls/metrics';
import { httpRequest, parseExposition, valueOf } from '@eso-mtls/test-kit/exposition';

const running: MetricsServer[] = [];
afterEach(async () => {
  await Promise.all(running.splice(0).map((s) => s.close()));
});

async function start(options: Parameters<typeof startMetricsServer>[0]): Promise<MetricsServer> {
  const server = await startMetricsServer(options);
  running.push(server);
  return server;
}

function registryWith(name: string, value: number): Registry {
  const registry = new Registry();
  new Gauge({ name, help: `${name} help`, registers: [registry] }).set(value);
  return registry;
}

describe('startMetricsServer', () => {
  it('serves GET /metrics with the registry body and the Prometheus content type', async () => {
    const registry = registryWith('test_value', 42);
    const server = await start({ registry, host: '127.0.0.1', port: 0 });
    expect(server.address.host).toBe('127.0.0.1');
    expect(server.address.port).toBeGreaterThan(0);
    expect(server.url).toBe(`http://127.0.0.1:${server.address.port}/metrics`);

    const res = await httpRequest(server.url);
    expect(res.status).toBe(200);
    expect(res.headers['content-type']).toBe(registry.contentType);
    expect(res.headers['content-type']).toBe('text/plain; version=0.0.4; charset=utf-8');
    expect(res.body).toBe(await registry.metrics());
    expect(valueOf(parseExposition(res.body), 'test_value')).toBe(42);
    // A query string does not change the path.
    expect((await httpRequest(`${server.url}?name[]=x`)).status).toBe(200);
  });

  it('answers HEAD with headers and no body, 404 elsewhere, 405 for other methods', async () => {
    const server = await start({ registry: registryWith('h', 1), host: '127.0.0.1', port: 0 });
    const head = await httpRequest(server.url, 'HEAD');
    expect(head.status).toBe(200);
    expect(head.body).toBe('');
    expect(Number(head.headers['content-length'])).toBeGreaterThan(0);

    const base = `http://127.0.0.1:${server.address.port}`;
    for (const path of ['/', '/metrics/', '/healthz', '/metricsx']) {
      const res = await httpRequest(base + path);
      expect([path, res.status]).toEqual([path, 404]);
      expect(res.body).toContain(`only ${METRICS_PATH} is served`);
    }
    for (const method of ['POST', 'PUT', 'DELETE']) {
      const res = await httpRequest(server.url, method);
      expect([method, res.status]).toEqual([method, 405]);
      expect(res.headers.allow).toBe('GET, HEAD');
    }
  });

  it('serves several registries as one exposition, and refuses ones that share a metric name', async () => {
    const server = await start({ registries: [registryWith('first', 1), registryWith('second', 2)], host: '127.0.0.1', port: 0 });
    const samples = parseExposition((await httpRequest(server.url)).body);
    expect([valueOf(samples, 'first'), valueOf(samples, 'second')]).toEqual([1, 2]);

    await expect(startMetricsServer({ registries: [registryWith('same', 1), registryWith('same', 2)], host: '127.0.0.1', port: 0 })).rejects.toThrow(
      /startMetricsServer: these registries cannot be served as one exposition: A metric with the name same has already been registered/,
    );
    await expect(startMetricsServer({ registries: [], host: '127.0.0.1', port: 0 })).rejects.toThrow(/give a registry/);
    const r = new Registry();
    await expect(startMetricsServer({ registry: r, registries: [r], host: '127.0.0.1', port: 0 })).rejects.toThrow(/not both/);
  });

  it('answers 500 and reports the error when collecting fails, then recovers', async () => {
    const registry = new Registry();
    let broken = true;
    new Gauge({
      name: 'flaky',
      help: 'fails on demand',
      registers: [registry],
      collect() {
        if (broken) throw new Error('source unavailable');
        this.set(7);
      },
    });
    const errors: unknown[] = [];
    const server = await start({ registry, host: '127.0.0.1', port: 0, onError: (e) => errors.push(e) });
    const failed = await httpRequest(server.url);
    expect(failed.status).toBe(500);
    expect(failed.body).toContain('collecting metrics failed: source unavailable');
    expect(errors.map((e) => (e as Error).message)).toEqual(['source unavailable']);
    broken = false;
    expect(valueOf(parseExposition((await httpRequest(server.url)).body), 'flaky')).toBe(7);
  });

  it('rejects a taken address or an impossible port with the address in the message', async () => {
    const blocker: Server = createServer();
    await new Promise<void>((resolve) => blocker.listen(0, '127.0.0.1', resolve));
    const port = (blocker.address() as { port: number }).port;
    try {
      await expect(startMetricsServer({ registry: new Registry(), host: '127.0.0.1', port })).rejects.toThrow(
        new RegExp(`metrics server cannot listen on 127.0.0.1:${port}: .*EADDRINUSE`),
      );
    } finally {
      await new Promise((resolve) => blocker.close(resolve));
    }
    await expect(startMetricsServer({ registry: new Registry(), host: '127.0.0.1', port: 70000 })).rejects.toThrow(/metrics port 70000 is not a TCP port/);
  });

  it('close() ends open connections, even one waiting for a slow scrape, so shutdown does not hang', async () => {
    const registry = new Registry();
    let scrapeStarted!: () => void;
    const started = new Promise<void>((resolve) => {
      scrapeStarted = resolve;
    });
    let release!: () => void;
    const released = new Promise<void>((resolve) => {
      release = resolve;
    });
    new Gauge({
      name: 'slow',
      help: 'waits for the test',
      registers: [registry],
      async collect() {
        scrapeStarted();
        await released;
      },
    });
    const server = await startMetricsServer({ registry, host: '127.0.0.1', port: 0 });
    const socket = connect(server.address.port, '127.0.0.1');
    const closed = new Promise<boolean>((resolve) => socket.once('close', resolve));
    socket.on('error', () => undefined); // the reset is the expected outcome
    socket.write('GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n');
    await started; // the server holds a busy connection, which server.close() alone waits on
    await server.close();
    await closed;
    expect(socket.bytesRead).toBe(0);
    release();
  });
});

describe('createMetricsHandler', () => {
  it('serves metrics next to other routes of an existing server, such as a provider health port', async () => {
    const handle = createMetricsHandler({ registry: registryWith('mounted', 5) });
    const server = createHttpServer((req, res) => {
      if (req.url === '/healthz') return void res.end('ok');
      if (req.url === '/metrics') return void handle(req, res);
      res.statusCode = 404;
      res.end();
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    try {
      const base = `http://127.0.0.1:${(server.address() as { port: number }).port}`;
      expect((await httpRequest(`${base}/healthz`)).body).toBe('ok');
      const res = await httpRequest(`${base}/metrics`);
      expect(res.headers['content-type']).toBe('text/plain; version=0.0.4; charset=utf-8');
      expect(valueOf(parseExposition(res.body), 'mounted')).toBe(5);
      expect((await httpRequest(`${base}/metrics`, 'PATCH')).status).toBe(405);
    } finally {
      server.closeAllConnections();
      await new Promise((resolve) => server.close(resolve));
    }
    expect(() => createMetricsHandler({ registries: [registryWith('d', 1), registryWith('d', 1)] })).toThrow(
      /these registries cannot be served as one exposition/,
    );
  });
});
