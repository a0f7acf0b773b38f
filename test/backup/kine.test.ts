/**
 * kine's rows as revision records (src/backup/kine.ts, kine-sqlite.ts), from a state.db written the way kine
 * writes it: creates, updates, deletes, re-creates, leases, fill rows and a compaction.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { KineMapper } from '../../src/backup/kine.js';
import type { RevisionRecord } from '../../src/backup/revision-record.js';
import Database from 'better-sqlite3';
import { readKineMeta, readKineRows } from '../../src/backup/kine-sqlite.js';
import { KineFixture } from './kine-fixture.js';

const dir = mkdtempSync(join(tmpdir(), 'etcetera-kine-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const text = (b: Uint8Array): string => new TextDecoder().decode(b);
const show = (r: RevisionRecord): string =>
  `${r.modRevision} ${text(r.key)} ${r.tombstone ? 'deleted' : `=${text(r.value)} create ${r.createRevision} v${r.version}${r.lease > 0n ? ` lease ${r.lease}` : ''}`}`;

function migrate(path: string): { records: string[]; mapper: KineMapper } {
  const mapper = new KineMapper();
  const records: string[] = [];
  for (const row of readKineRows(Database, path)) {
    const r = mapper.map(row);
    if (r !== undefined) records.push(show(r));
  }
  return { records, mapper };
}

describe('kine state.db → revision records', () => {
  it('keeps every revision as it is, with create revisions, versions, deletions and leases', () => {
    const path = join(dir, 'history.db');
    const k = new KineFixture(path); // row 1: compact_rev_key
    k.create('/registry/a', 'a1'); // 2
    k.create('/registry/b', 'b1', 3600); // 3
    k.update('/registry/a', 'a2'); // 4
    k.fill(); // 5: gap-5
    k.delete('/registry/b'); // 6
    k.create('/registry/b', 'b2'); // 7
    k.update('/registry/a', 'a3', 60); // 8
    k.close();
    const { records, mapper } = migrate(path);
    expect(records).toEqual([
      '2 /registry/a =a1 create 2 v1',
      '3 /registry/b =b1 create 3 v1 lease 3600',
      '4 /registry/a =a2 create 2 v2',
      '6 /registry/b deleted',
      '7 /registry/b =b2 create 7 v1',
      '8 /registry/a =a3 create 2 v3 lease 60',
    ]);
    expect(mapper.currentRevision).toBe(8);
    expect(mapper.compactRevision).toBe(0);
    // Only leases of live keys: b's was released with its deletion.
    expect(mapper.leases()).toEqual([{ id: 60n, ttlSeconds: 60, remainingTtlSeconds: 0 }]);
    expect(readKineMeta(Database, path)).toEqual({ compactRevision: 0, currentRevision: 8, rows: 8 });
  });

  it('starts from the compacted revision: superseded and deleted rows are gone, versions count from what is left', () => {
    const path = join(dir, 'compacted.db');
    const k = new KineFixture(path);
    k.create('/r/x', 'x1'); // 2
    k.update('/r/x', 'x2'); // 3
    k.create('/r/y', 'y1'); // 4
    k.delete('/r/y'); // 5
    k.update('/r/x', 'x3'); // 6
    k.compact(5);
    k.update('/r/x', 'x4'); // 7
    k.close();
    const { records, mapper } = migrate(path);
    expect(records).toEqual(['3 /r/x =x2 create 2 v1', '6 /r/x =x3 create 2 v2', '7 /r/x =x4 create 2 v3']);
    expect(mapper.compactRevision).toBe(5);
    expect(mapper.currentRevision).toBe(7);
    expect(readKineMeta(Database, path).compactRevision).toBe(5);
  });

  it('refuses a file that is not a kine database, saying so', () => {
    const path = join(dir, 'other.db');
    const k = new KineFixture(path);
    k.db.exec('DROP TABLE kine');
    k.close();
    expect(() => [...readKineRows(Database, path)]).toThrow(`${path} is not a kine database: table kine is missing`);
    expect(() => [...readKineRows(Database, join(dir, 'absent.db'))]).toThrow('cannot open kine database');
  });
});
