import { isDnsLabel } from '@eso-mtls/core';

/** A label value this package refuses; the message names the value and what is accepted. */
export class MetricLabelError extends Error {
  /** Always `MetricLabelError`. */
  override readonly name = 'MetricLabelError';
}

/** The `namespace` and `service` labels of every per-Service series. */
export interface ServiceLabels {
  /** The `namespace` label. */
  readonly namespace: string;
  /** The `service` label. */
  readonly service: string;
}

/**
 * Checks a namespace and Service name before they become label values. Prometheus drops a label
 * whose value is empty, so an empty name would silently merge series; Kubernetes names are
 * DNS-1123 labels, so anything else is a caller's bug worth reporting.
 */
export function serviceLabels(namespace: string, service: string): ServiceLabels {
  if (typeof namespace !== 'string' || !isDnsLabel(namespace)) {
    throw new MetricLabelError(
      `namespace label ${JSON.stringify(namespace)} is not a Kubernetes namespace name (a DNS-1123 label: lower-case letters, digits and '-', 1-63 characters)`,
    );
  }
  if (typeof service !== 'string' || !isDnsLabel(service)) {
    throw new MetricLabelError(
      `service label ${JSON.stringify(service)} in namespace ${namespace} is not a Kubernetes Service name (a DNS-1123 label: lower-case letters, digits and '-', 1-63 characters)`,
    );
  }
  return { namespace, service };
}

/** A stable map key for one namespace/Service pair ('/' cannot occur in either name). */
export const serviceKey = (labels: ServiceLabels): string => `${labels.namespace}/${labels.service}`;
