export * from './wire/index.js';
export * from './server/index.js';
export * from './client/index.js';
export * from './tls/index.js';
