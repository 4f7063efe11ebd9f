import type { KubeConfig } from '@kubernetes/client-node';
import type { AdapterOptions, ProviderCertificateAdapter } from '../../src/index.js';
// The controller's own wiring, from its source: @eso-mtls/controller depends on this package, so
// this package does not depend on it; a test-only relative import adds no edge to the build.
import { wireProviderCertificates } from '../../../controller/src/wiring.js';
import { ScrapeRecorder } from './alerts.js';
import { TestClock } from './cluster.js';
import { RecordingLogger } from './logger.js';

/**
 * An adapter of ESO namespace `eso` wired to ControllerMetrics by the controller's own wiring
 * function (wireProviderCertificates, which startController uses), with a recording logger and a
 * clock the test moves. Added to `running`, for the suite's afterEach to stop.
 */
export async function controllerLike(
  kubeConfig: KubeConfig,
  eso: string,
  options: Omit<Partial<AdapterOptions>, 'hooks'>,
  running: ProviderCertificateAdapter[],
) {
  const logger = new RecordingLogger();
  const clock = new TestClock();
  const { adapter, metrics } = await wireProviderCertificates({
    kubeConfig,
    debounceMs: 20,
    ...options,
    now: clock.now,
    logger,
    policy: { ...options.policy, esoNamespace: eso },
  });
  running.push(adapter);
  return { adapter, metrics, logger, clock, scrapes: new ScrapeRecorder(metrics.registry) };
}
