import type { Registry } from 'prom-client';
import { startMetricsServer, type MetricsServer } from '@eso-mtls/metrics';
import { scrape, type Scrape } from '@eso-mtls/test-kit/exposition';

/** Serves registries on 127.0.0.1 for one test file; `stop()` in afterAll/afterEach. */
export class Served {
  private readonly servers: MetricsServer[] = [];

  async start(...registries: Registry[]): Promise<() => Promise<Scrape>> {
    const server = await startMetricsServer({ registries, host: '127.0.0.1', port: 0 });
    this.servers.push(server);
    return async () => {
      const result = await scrape(server.url);
      if (result.status !== 200) throw new Error(`scrape of ${server.url} answered ${result.status}: ${result.body}`);
      return result;
    };
  }

  async stop(): Promise<void> {
    await Promise.all(this.servers.splice(0).map((s) => s.close()));
  }
}
