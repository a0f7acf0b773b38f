/**
 * `etcdctl snapshot restore FILE --data-dir D ...` for ours or etcd's files: the file's contents as
 * etcd-db/etcd-db-file.ts reads them, imported into a fresh data directory through importRevisions.
 */
import { readSnapshotFile, RestoreError, verifySnapshotHash } from '../etcd-db/etcd-db-file.js';
import { importRevisions, type ImportExtras, type ImportResult } from './import.js';
import { entryToRecord, type RevisionRecord } from './revision-record.js';

export interface RestoreOptions extends Omit<ImportExtras, 'leases' | 'compactRevision' | 'raw'> {
  /** Restore a file without the SHA-256 trailer (etcdctl's --skip-hash-check; e.g. a copied member/snap/db). */
  skipHashCheck?: boolean;
}

export async function restoreSnapshotFile(path: string, dataDir: string, options: RestoreOptions): Promise<ImportResult> {
  const hashed = await verifySnapshotHash(path);
  if (!hashed && options.skipHashCheck !== true) throw new RestoreError('snapshot missing hash but --skip-hash-check=false');
  return readSnapshotFile(path, ({ keyEntries, leases, compactRevision, raw }) =>
    importRevisions(dataDir, records(keyEntries), { ...options, leases, compactRevision, raw }),
  );
}

async function* records(entries: AsyncIterable<[Uint8Array, Uint8Array]>): AsyncIterable<RevisionRecord> {
  for await (const [k, v] of entries) {
    let r: RevisionRecord;
    try {
      r = entryToRecord(k, v);
    } catch (err) {
      throw new RestoreError(`the key bucket holds an entry that is not a revision and a KeyValue: ${err instanceof Error ? err.message : String(err)}`);
    }
    yield r;
  }
}
