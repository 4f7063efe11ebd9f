export * from './messages.js';
export * from './proto.js';
export * from './service.js';
export * from './errors.js';
