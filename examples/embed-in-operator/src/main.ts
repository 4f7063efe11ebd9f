import { randomUUID } from 'node:crypto';
import { existsSync } from 'node:fs';
import { hostname } from 'node:os';
import { pathToFileURL } from 'node:url';
import { createLogger, loadConnection, pingCheck, startProbeServer } from '@eso-mtls/controller';
import { startMetricsServer } from '@eso-mtls/metrics';
import { Registry, collectDefaultMetrics } from 'prom-client';
import { startProviderCertificates } from './embed.js';

/** The example operator's settings, read from the environment as its Deployment would set them. */
export interface OperatorConfig {
  /** Undefined: in-cluster (service account token and CA). */
  readonly kubeconfig: string | undefined;
  readonly esoNamespace: string;
  readonly lease: { readonly namespace: string; readonly name: string };
  readonly identity: string;
  readonly host: string;
  readonly metricsPort: number;
  readonly healthPort: number;
}

/** Reads {@link OperatorConfig}; throws naming the variable and its value when one is unusable. */
export function operatorConfig(env: Readonly<Record<string, string | undefined>>): OperatorConfig {
  const port = (name: string, fallback: number): number => {
    const raw = env[name];
    if (raw === undefined || raw === '') return fallback;
    const n = Number(raw);
    if (!Number.isInteger(n) || n < 0 || n > 65535) throw new Error(`${name}=${JSON.stringify(raw)} is not a TCP port (0-65535; 0 picks a free one)`);
    return n;
  };
  const esoNamespace = env.ESO_NAMESPACE || 'external-secrets-system';
  return {
    kubeconfig: env.KUBECONFIG || undefined,
    esoNamespace,
    lease: { namespace: env.POD_NAMESPACE || esoNamespace, name: env.LEASE_NAME || 'example-operator' },
    identity: env.POD_NAME || `${hostname()}_${randomUUID()}`,
    host: env.BIND_HOST || '0.0.0.0',
    metricsPort: port('METRICS_PORT', 8080),
    healthPort: port('HEALTH_PORT', 8081),
  };
}

/**
 * "Your operator": a process with its own logger, registry, probes and signal handling, which adds
 * ESO's provider certificates with {@link startProviderCertificates}. On SIGTERM it stops them
 * (releasing the Lease), closes its servers and exits by itself, with nothing left running.
 */
async function main(): Promise<void> {
  // Listening from the start, so a SIGTERM during start-up still shuts down cleanly; `once`, so a
  // second signal takes Node's default action and ends the process at once.
  const signalled = new Promise<NodeJS.Signals>((resolve) => {
    process.once('SIGTERM', resolve);
    process.once('SIGINT', resolve);
  });
  const config = operatorConfig(process.env);
  // Every line, ours and the certificates' alike, names this operator, not eso-mtls-controller.
  const logger = createLogger('info', { component: 'example-operator' });
  const registry = new Registry();
  collectDefaultMetrics({ register: registry }); // the host's own metrics, served beside ours

  // loadConnection names the controller's --kubeconfig flag; this operator reads KUBECONFIG.
  if (config.kubeconfig !== undefined && !existsSync(config.kubeconfig)) throw new Error(`KUBECONFIG=${config.kubeconfig}: no such file`);
  const { connection } = await loadConnection(config.kubeconfig, process.env);
  const certificates = await startProviderCertificates({
    connection,
    esoNamespace: config.esoNamespace,
    lease: config.lease,
    identity: config.identity,
    logger,
    registry,
  });
  const opened: { close(): Promise<void> }[] = [];
  try {
    const metricsServer = await startMetricsServer({ registry, host: config.host, port: config.metricsPort });
    opened.push(metricsServer);
    const probes = await startProbeServer({
      host: config.host,
      port: config.healthPort,
      liveness: [pingCheck],
      readiness: [{ name: 'provider-certificates', check: () => (certificates.ready() ? undefined : 'caches not synced or Lease holder not known yet') }],
    });
    opened.push(probes);
    logger.info(
      { identity: config.identity, lease: `${config.lease.namespace}/${config.lease.name}`, metrics: metricsServer.url, probes: probes.url },
      'example operator running',
    );
    certificates.synced.then(
      () => logger.info({}, 'caches synced; campaigning for the Lease'),
      (e: unknown) => logger.warn({ error: (e as Error).message }, 'caches did not sync'),
    );
    const signal = await signalled;
    logger.info({ signal }, 'shutting down: fencing writes, finishing the one in flight, releasing the Lease');
  } finally {
    await certificates.stop();
    await Promise.all(opened.map((s) => s.close()));
  }
  logger.info({}, 'stopped');
  // Nothing is left running: the process exits by itself, which the example's test checks.
}

if (process.argv[1] !== undefined && import.meta.url === pathToFileURL(process.argv[1]).href) {
  main().catch((e: unknown) => {
    process.stderr.write(`example operator: ${e instanceof Error ? e.message : String(e)}\n`);
    process.exitCode = 1;
  });
}
