export * from './metric-names.js';
export { MetricLabelError, type ServiceLabels, serviceLabels } from './labels.js';
export * from './rotation-reason.js';
export { secondsUntil } from './expiry.js';
export * from './controller-metrics.js';
export * from './provider-metrics.js';
export * from './provider-identity.js';
export { createMetricsHandler, type MetricsHandler, type MetricsHandlerOptions } from './metrics-handler.js';
export * from './metrics-server.js';
