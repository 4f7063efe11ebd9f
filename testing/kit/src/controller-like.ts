import type { KubeConfig } from '@kubernetes/client-node';
import type { AdapterOptions, ProviderCertificateAdapter } from '@eso-mtls/kubernetes';
import { wireProviderCertificates } from '@eso-mtls/controller';
import { ScrapeRecorder } from './scrapes.js';
import { TestClock } from './clock.js';
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
