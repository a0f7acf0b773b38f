export { saveSnapshotFile, writeEtcdSnapshot, type EtcdSnapshotResult, type SnapshotHandle, type WriteEtcdSnapshotOptions } from './export.js';
export { snapshotBuckets, type SnapshotBucket } from './buckets.js';
