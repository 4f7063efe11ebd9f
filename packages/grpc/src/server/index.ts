export * from './provider.js';
export * from './identity.js';
export * from './health.js';
export * from './options.js';
export * from './start.js';
export type { ServedCertificateSource } from './certificate-source.js';
export type { CallObserver } from './handlers.js';
