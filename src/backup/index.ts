export { importRevisions, RestoreError, type ImportExtras, type ImportResult, type RestoreCluster } from './import.js';
export type { RevisionRecord } from './revision-record.js';
export { restoreSnapshotFile, snapshotStatus, verifySnapshotHash, type RestoreOptions, type SnapshotStatus } from './etcd-db-file.js';
export { fetchSnapshot, type FetchOptions } from './fetch-snapshot.js';
