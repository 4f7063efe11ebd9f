import { pathToFileURL } from 'node:url';
import { startProviderServer, type ProviderServer } from '@eso-mtls/grpc';
import { parseFileProviderConfig, type FileProviderConfig } from './config.js';
import { createFileProvider } from './provider.js';
import { FileSecretStore } from './store.js';

/** A running file provider. */
export interface RunningFileProvider {
  readonly server: ProviderServer;
  readonly store: FileSecretStore;
  close(): Promise<void>;
}

const log = (message: string, fields: Record<string, unknown> = {}): void => {
  process.stdout.write(`${JSON.stringify({ time: new Date().toISOString(), message, ...fields })}\n`);
};

/** Opens the data file and starts the provider server on it. */
export async function runFileProvider(config: FileProviderConfig): Promise<RunningFileProvider> {
  const store = await FileSecretStore.open({
    path: config.dataFile,
    onReload: (file) => log('data file reloaded', { path: config.dataFile, secrets: Object.keys(file.secrets).length }),
    onError: (e) => log('data file rejected; serving its last good contents', { path: config.dataFile, error: e.message }),
  });
  try {
    const server = await startProviderServer({
      implementation: createFileProvider(store),
      certDir: config.certDir,
      certLayout: config.certLayout,
      minTlsVersion: config.minTlsVersion,
      host: config.host,
      port: config.port,
      healthPort: config.healthPort,
      metrics: config.metrics,
      onCall: (c) => c.code !== 0 && log('call failed', { method: c.method, code: c.code, details: c.details }),
      log: ({ message, ...fields }) => log(message, fields),
    });
    return {
      server,
      store,
      close: async () => {
        await server.close();
        store.close();
      },
    };
  } catch (e) {
    store.close();
    throw e;
  }
}

async function main(): Promise<void> {
  const running = await runFileProvider(parseFileProviderConfig(process.argv.slice(2), process.env));
  log('serving', { port: running.server.port, healthPort: running.server.healthPort });
  const stop = (signal: string): void => {
    log('stopping', { signal });
    void running.close().then(() => process.exit(0));
  };
  process.once('SIGTERM', () => stop('SIGTERM'));
  process.once('SIGINT', () => stop('SIGINT'));
}

if (process.argv[1] !== undefined && import.meta.url === pathToFileURL(process.argv[1]).href) {
  main().catch((e: unknown) => {
    process.stderr.write(`file-provider: ${e instanceof Error ? e.message : String(e)}\n`);
    process.exit(1);
  });
}
