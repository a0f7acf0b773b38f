export * from './types.js';
export { RawNode } from './raw-node.js';
