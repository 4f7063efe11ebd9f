import { ControllerMetrics, type ControllerCertificateSource, type MetricsServer, startMetricsServer } from '@eso-mtls/metrics';

/** The controller's metrics and where they are served. */
export interface DemoMetrics {
  readonly controller: ControllerMetrics;
  /** Undefined when serving was turned off (`--metrics-bind-address 0`). */
  readonly server: MetricsServer | undefined;
  close(): Promise<void>;
}

/**
 * The controller's real metrics (expiry gauges computed at scrape time from `source`, rotation
 * counters fed by the demo's reconcile loop), served at `/metrics` on `address` as the controller
 * serves them. Each provider serves its own on its health port.
 */
export async function startDemoMetrics(
  source: ControllerCertificateSource,
  address: { readonly host: string; readonly port: number } | null,
): Promise<DemoMetrics> {
  const controller = new ControllerMetrics({ now: () => Date.now(), source });
  const server = address === null ? undefined : await startMetricsServer({ host: address.host, port: address.port, registry: controller.registry });
  return { controller, server, close: async () => server?.close() };
}
