export * from './wire/index.js';
