export * from './material.js';
export * from './mounted-file.js';
export * from './watcher.js';
export * from './server-credentials.js';
export * from './client-material.js';
export * from './client-channel.js';
export * from './channel-pool.js';
