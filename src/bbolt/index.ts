export { BboltFormatError, defaultPageBytes, type Meta } from './format.js';
export { BboltReader, type BucketStats, type LeafEntry } from './reader.js';
export { BboltWriter, type BboltWriterOptions } from './writer.js';
