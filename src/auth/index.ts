export * from './auth-store.js';
export * from './kv-checks.js';
export * from './range-perms.js';
export * from './requests.js';
export * from './types.js';
