import type { MemoryStore } from '@eso-mtls/core';
import { CertificateStatusView, type LabelledService } from '@eso-mtls/kubernetes';

/**
 * What the controller's metrics read at scrape time in the demo: the Kubernetes adapter's own
 * view, over the labelled Services of the in-memory cluster, for one controller that always leads.
 */
export function demoCertificateStatus(store: MemoryStore): CertificateStatusView {
  return new CertificateStatusView(
    () => labelledServices(store),
    () => true,
    () => new Map(), // the demo has no pod-certificate mode
  );
}

function* labelledServices(store: MemoryStore): Iterable<LabelledService> {
  for (const namespace of store.providerNamespaces()) {
    for (const { name } of store.servicesOf(namespace)) yield { namespace, service: name };
  }
}
