/**
 * `etcetera migrate --from-kine state.db --data-dir D`: k3s's SQLite datastore (kine) into a new data
 * directory, through the same importer as a snapshot restore (src/backup/import.ts). Revisions are kept as
 * they are (kine.ts), so the store's revision is the source's.
 */
import { importRevisions, type ImportResult, type RestoreCluster } from './import.js';
import { KineMapper } from './kine.js';
import type { RevisionRecord } from './revision-record.js';
import { loadSqlite, readKineMeta, readKineRows } from './kine-sqlite.js';

export interface KineMigrateResult extends ImportResult {
  /** The source's current revision (the largest row id). */
  sourceRevision: number;
  sourceCompactRevision: number;
}

export async function migrateFromKine(
  source: string,
  dataDir: string,
  options: { cluster: RestoreCluster; onProgress?: (records: number) => void; walDir?: string },
): Promise<KineMigrateResult> {
  const sqlite = await loadSqlite();
  const meta = readKineMeta(sqlite, source);
  const mapper = new KineMapper();
  function* records(): Generator<RevisionRecord> {
    for (const row of readKineRows(sqlite, source)) {
      const r = mapper.map(row);
      if (r !== undefined) yield r;
    }
  }
  // Read by the importer after the records, once the mapper has seen which leases live keys hold.
  function* leases(): Generator<{ id: bigint; ttlSeconds: number; remainingTtlSeconds: number }> {
    yield* mapper.leases();
  }
  const result = await importRevisions(dataDir, records(), {
    cluster: options.cluster,
    ...(options.walDir !== undefined ? { walDir: options.walDir } : {}),
    leases: leases(),
    compactRevision: meta.compactRevision,
    ...(options.onProgress !== undefined ? { onProgress: options.onProgress } : {}),
  });
  return { ...result, sourceRevision: meta.currentRevision, sourceCompactRevision: meta.compactRevision };
}
