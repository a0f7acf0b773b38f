/**
 * A kine `state.db` built the way kine writes it (k3s-io/kine pkg/drivers/sqlite schema, pkg/logstructured
 * append semantics, pkg/drivers/generic compaction and fill rows), for migration tests.
 */
import Database from 'better-sqlite3';

const schema = [
  `CREATE TABLE IF NOT EXISTS kine (
    id INTEGER PRIMARY KEY AUTOINCREMENT, name INTEGER, created INTEGER, deleted INTEGER,
    create_revision INTEGER, prev_revision INTEGER, lease INTEGER, value BLOB, old_value BLOB)`,
  'CREATE INDEX IF NOT EXISTS kine_name_index ON kine (name)',
  'CREATE INDEX IF NOT EXISTS kine_name_id_index ON kine (name,id)',
  'CREATE INDEX IF NOT EXISTS kine_id_deleted_index ON kine (id,deleted)',
  'CREATE INDEX IF NOT EXISTS kine_prev_revision_index ON kine (prev_revision)',
  'CREATE UNIQUE INDEX IF NOT EXISTS kine_name_prev_revision_uindex ON kine (name, prev_revision)',
];

interface Latest {
  id: number;
  createRevision: number;
  deleted: boolean;
  lease: number;
  value: Buffer;
}

export class KineFixture {
  readonly db: Database.Database;
  readonly #latest = new Map<string, Latest>();

  constructor(path: string) {
    this.db = new Database(path);
    this.db.pragma('journal_mode = WAL');
    for (const s of schema) this.db.exec(s);
    // kine's compactStart: the bookkeeping row, at the first revision.
    this.#insert('compact_rev_key', { created: 1, deleted: 0, createRevision: 0, prev: 0, lease: 0, value: Buffer.alloc(0), old: null });
  }

  #insert(name: string, r: { created: number; deleted: number; createRevision: number; prev: number; lease: number; value: Buffer; old: Buffer | null }): number {
    const info = this.db
      .prepare('INSERT INTO kine(name, created, deleted, create_revision, prev_revision, lease, value, old_value) VALUES(?, ?, ?, ?, ?, ?, ?, ?)')
      .run(name, r.created, r.deleted, r.createRevision, r.prev, r.lease, r.value, r.old);
    return Number(info.lastInsertRowid);
  }

  create(key: string, value: string, lease = 0): number {
    const prev = this.#latest.get(key);
    if (prev !== undefined && !prev.deleted) throw new Error(`kine: key exists: ${key}`);
    const v = Buffer.from(value);
    const id = this.#insert(key, { created: 1, deleted: 0, createRevision: 0, prev: prev?.id ?? 0, lease, value: v, old: prev?.value ?? null });
    this.#latest.set(key, { id, createRevision: id, deleted: false, lease, value: v });
    return id;
  }

  update(key: string, value: string, lease = 0): number {
    const prev = this.#latest.get(key);
    if (prev === undefined || prev.deleted) throw new Error(`kine: no key ${key}`);
    const v = Buffer.from(value);
    const id = this.#insert(key, { created: 0, deleted: 0, createRevision: prev.createRevision, prev: prev.id, lease, value: v, old: prev.value });
    this.#latest.set(key, { id, createRevision: prev.createRevision, deleted: false, lease, value: v });
    return id;
  }

  delete(key: string): number {
    const prev = this.#latest.get(key);
    if (prev === undefined || prev.deleted) throw new Error(`kine: no key ${key}`);
    const id = this.#insert(key, { created: 0, deleted: 1, createRevision: prev.createRevision, prev: prev.id, lease: prev.lease, value: prev.value, old: prev.value });
    this.#latest.set(key, { ...prev, id, deleted: true });
    return id;
  }

  /** A fill row, as kine's poller writes for an id a failed insert skipped. */
  fill(): number {
    const id = (this.db.prepare('SELECT MAX(id) AS id FROM kine').get() as { id: number }).id + 1;
    this.db.prepare('INSERT INTO kine(id, name, created, deleted, create_revision, prev_revision, lease, value, old_value) VALUES(?, ?, 0, 1, 0, 0, 0, NULL, NULL)').run(id, `gap-${id}`);
    return id;
  }

  /** kine's compaction: superseded rows and deletion rows up to `revision` are gone. */
  compact(revision: number): void {
    this.db.prepare(`DELETE FROM kine WHERE id IN (
        SELECT kp.prev_revision FROM kine AS kp WHERE kp.name != 'compact_rev_key' AND kp.prev_revision != 0 AND kp.id <= ?
        UNION SELECT kd.id FROM kine AS kd WHERE kd.deleted != 0 AND kd.id <= ?)`).run(revision, revision);
    this.db.prepare("UPDATE kine SET prev_revision = ? WHERE name = 'compact_rev_key'").run(revision);
  }

  close(): void {
    this.db.close();
  }
}
