/**
 * kine's SQLite `state.db` read row by row, in revision order, with better-sqlite3 (read-only; stop k3s
 * first so the file is not changing under the migration). See kine.ts for what the rows mean.
 *
 * better-sqlite3 is a native module and an optional dependency: `npm ci` on a board with no prebuilt binary
 * and no C toolchain skips it, and everything but `migrate --from-kine` works without it. It is loaded only
 * here, when a migration starts (loadSqlite), and its absence is a sentence saying how to add it.
 */
import type Database from 'better-sqlite3';
import { RestoreError } from './import.js';
import { kineCompactRevKey, type KineRow } from './kine.js';

const kineColumns = ['id', 'name', 'created', 'deleted', 'create_revision', 'prev_revision', 'lease', 'value'] as const;

interface SqlRow {
  id: number;
  name: string | Uint8Array;
  created: number | null;
  deleted: number | null;
  create_revision: number | null;
  prev_revision: number | null;
  lease: number | null;
  value: Uint8Array | null;
}

/** The better-sqlite3 Database class. */
export type Sqlite = typeof Database;

export async function loadSqlite(): Promise<Sqlite> {
  try {
    return (await import('better-sqlite3')).default;
  } catch (error) {
    throw new RestoreError(
      'migrate --from-kine needs better-sqlite3, an optional dependency that is not installed here ' +
        `(${(error as Error).message.split('\n')[0]}): run \`npm install better-sqlite3\` where etcetera is installed ` +
        '(it needs a prebuilt binary for this platform or a C toolchain), then migrate again',
    );
  }
}

/** Streams the rows (the table is never loaded whole); closes the database when iteration ends. */
export function* readKineRows(sqlite: Sqlite, path: string): Generator<KineRow> {
  const db = openKine(sqlite, path);
  try {
    const rows = db.prepare(`SELECT ${kineColumns.join(', ')} FROM kine ORDER BY id`).iterate() as IterableIterator<SqlRow>;
    const decoder = new TextDecoder();
    for (const r of rows) {
      yield {
        id: r.id,
        name: typeof r.name === 'string' ? r.name : decoder.decode(r.name),
        created: r.created ?? 0,
        deleted: r.deleted ?? 0,
        createRevision: r.create_revision ?? 0,
        prevRevision: r.prev_revision ?? 0,
        lease: r.lease ?? 0,
        value: r.value,
      };
    }
  } finally {
    db.close();
  }
}

/** What the migration must know before streaming the rows: the compacted and the current revision. */
export function readKineMeta(sqlite: Sqlite, path: string): { compactRevision: number; currentRevision: number; rows: number } {
  const db = openKine(sqlite, path);
  try {
    const compact = db.prepare(`SELECT MAX(prev_revision) AS rev FROM kine WHERE name = '${kineCompactRevKey}'`).get() as { rev: number | null };
    const current = db.prepare('SELECT MAX(id) AS rev, COUNT(*) AS rows FROM kine').get() as { rev: number | null; rows: number };
    return { compactRevision: compact.rev ?? 0, currentRevision: current.rev ?? 0, rows: current.rows };
  } finally {
    db.close();
  }
}

/** Opens read-only and checks kine's table is there with the columns we read. */
function openKine(sqlite: Sqlite, path: string): Database.Database {
  let db: Database.Database;
  try {
    db = new sqlite(path, { readonly: true, fileMustExist: true });
  } catch (error) {
    throw new RestoreError(`cannot open kine database ${path}: ${(error as Error).message}`);
  }
  const columns = new Set((db.prepare('PRAGMA table_info(kine)').all() as Array<{ name: string }>).map((c) => c.name));
  const missing = kineColumns.filter((c) => !columns.has(c));
  if (missing.length > 0) {
    db.close();
    throw new RestoreError(`${path} is not a kine database: table kine ${columns.size === 0 ? 'is missing' : `lacks ${missing.join(', ')}`}`);
  }
  return db;
}
