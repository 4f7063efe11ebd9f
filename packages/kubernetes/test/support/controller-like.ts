import type { KubeConfig } from '@kubernetes/client-node';
import { ControllerMetrics } from '@eso-mtls/metrics';
import { type AdapterOptions, ProviderCertificateAdapter } from '../../src/index.js';
import { ScrapeRecorder } from './alerts.js';
import { TestClock } from './cluster.js';
import { RecordingLogger } from './logger.js';

/**
 * An adapter of ESO namespace `eso` wired to ControllerMetrics as the controller wires it (the
 * rotation and failure hooks move the counters), with a recording logger and a clock the test
 * moves. Added to `running`, for the suite's afterEach to stop.
 */
export async function controllerLike(kubeConfig: KubeConfig, eso: string, options: Partial<AdapterOptions>, running: ProviderCertificateAdapter[]) {
  const logger = new RecordingLogger();
  const clock = new TestClock();
  // The hooks run only after start(), by which time the metrics (which read the adapter) exist.
  const wired: { metrics?: ControllerMetrics } = {};
  const adapter = await ProviderCertificateAdapter.create({
    kubeConfig,
    debounceMs: 20,
    now: clock.now,
    logger,
    ...options,
    policy: { ...options.policy, esoNamespace: eso },
    hooks: {
      onRotation: (namespace, services, reason) => wired.metrics!.recordRotation(namespace, services, reason),
      onRotationFailure: (namespace, services) => wired.metrics!.recordRotationFailure(namespace, services),
      onCaRotationFailure: () => wired.metrics!.recordCaRotationFailure(),
    },
  });
  running.push(adapter);
  const metrics = new ControllerMetrics({ now: clock.now, source: adapter.status });
  wired.metrics = metrics;
  return { adapter, metrics, logger, clock, scrapes: new ScrapeRecorder(metrics.registry) };
}
