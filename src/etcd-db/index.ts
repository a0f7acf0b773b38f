export { saveSnapshotFile, writeEtcdSnapshot, type EtcdSnapshotResult, type SnapshotHandle, type WriteEtcdSnapshotOptions } from './export.js';
export { snapshotBuckets, type SnapshotBucket } from './buckets.js';
export { hasHashTrailer, readSnapshotFile, RestoreError, snapshotStatus, verifySnapshotHash, type SnapshotContents, type SnapshotStatus } from './etcd-db-file.js';
