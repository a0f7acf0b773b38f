export * from './types.js';
export { RawNode } from './raw-node.js';
export { encodeConfChange, decodeConfChange } from './conf.js';
