export * from './errors.js';
export * from './fs-port.js';
export * from './metrics.js';
export * from './profiles.js';
export * from './wal.js';
export { crc32c } from './crc32c.js';
