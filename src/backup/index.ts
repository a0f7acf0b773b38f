export { importRevisions, RestoreError, type ImportExtras, type ImportResult, type RestoreCluster } from './import.js';
export type { RevisionRecord } from './revision-record.js';
export { snapshotStatus, verifySnapshotHash, type SnapshotStatus } from '../etcd-db/etcd-db-file.js';
export { restoreSnapshotFile, type RestoreOptions } from './snapshot-restore.js';
export { fetchSnapshot, type FetchOptions } from './fetch-snapshot.js';
