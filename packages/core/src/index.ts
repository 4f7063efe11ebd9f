export * from './time.js';
export * from './names.js';
export * from './policy.js';
export * from './crypto.js';
export * from './certificate.js';
