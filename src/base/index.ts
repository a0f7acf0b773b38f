export * from './assert.js';
export * from './bytes.js';
export * from './clock.js';
export * from './histogram.js';
export * from './limits.js';
export * from './prng.js';
export * from './scheduler.js';
