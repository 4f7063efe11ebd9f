export * from './retry.js';
export * from './typed-client.js';
