/**
 * A refused start changes no file (issue 32, item 2): for each way a restart can be refused, the whole data
 * directory and the --wal-dir outside it (names, modes, contents) hash the same before and after, and the
 * message names the way out. Before this, LevelDB had replayed its log into a new table and rewritten its
 * MANIFEST, and member/index.ckpt was gone, by the time the damaged log was found.
 */
import { createHash } from 'node:crypto';
import { cpSync, lstatSync, mkdirSync, readFileSync, readdirSync, readlinkSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:net';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Etcd3 } from 'etcd3';
import { killAll, sleep, startServer, tempDir, type ServerProcess } from './harness.js';

afterAll(() => killAll());

/** Every entry under `dirs`: relative path, type, mode, and the SHA-256 of its contents (or link target). */
function treeHash(dirs: string[]): Map<string, string> {
  const out = new Map<string, string>();
  const walk = (root: string, rel: string): void => {
    for (const name of readdirSync(join(root, rel)).sort()) {
      const path = join(root, rel, name);
      const st = lstatSync(path);
      const key = `${root}:${join(rel, name)}`;
      const mode = (st.mode & 0o7777).toString(8);
      if (st.isDirectory()) {
        out.set(key, `dir ${mode}`);
        walk(root, join(rel, name));
      } else if (st.isSymbolicLink()) out.set(key, `link ${readlinkSync(path)}`);
      else out.set(key, `file ${mode} ${createHash('sha256').update(readFileSync(path)).digest('hex')}`);
    }
  };
  for (const d of dirs) walk(d, '');
  return out;
}

/** Offsets of the records in a segment (64-byte header, then `u32 length` + 12 header bytes + padded payload). */
function recordOffsets(bytes: Buffer): { at: number; length: number; type: number }[] {
  const out: { at: number; length: number; type: number }[] = [];
  for (let at = 64; at + 16 <= bytes.length && bytes.readUInt32LE(at) !== 0; at += 16 + ((bytes.readUInt32LE(at) + 7) & ~7)) {
    out.push({ at, length: bytes.readUInt32LE(at), type: bytes[at + 4]! });
  }
  return out;
}

describe('every refused restart leaves the data directory and --wal-dir byte-identical', () => {
  let sp: ServerProcess;
  let walDir: string;
  let segment: string;

  beforeAll(async () => {
    walDir = join(tempDir('refused-wal'), 'wal');
    sp = await startServer({ name: 'refused', args: ['--wal-dir', walDir, '--token', 's3cret-token-for-the-refusals'] });
    const c = new Etcd3({ hosts: sp.clientUrl, dialTimeout: 2000 });
    try {
      for (let i = 0; i < 20; i++) await c.put(`k${i}`).value('v'.repeat(100));
      await c.put('last').value('x'.repeat(4000)); // a large last entries record, easy to hit
    } finally {
      c.close();
    }
    // A clean stop: the key-index checkpoint is written and LevelDB's log still holds the memtable, so a
    // start that opens the backend rewrites its files.
    expect(await sp.kill('SIGTERM')).toBe(0);
    segment = join(walDir, readdirSync(walDir).filter((n) => n.endsWith('.wal')).sort().pop()!);
    expect(readdirSync(join(sp.dataDir, 'member'))).toContain('index.ckpt');
    expect(readdirSync(join(sp.dataDir, 'member/db')).some((n) => n.endsWith('.log'))).toBe(true);
  }, 60_000);

  /** Breaks something, starts the member, expects exit 1 with `message` and every file as it was; repairs. */
  async function refused(o: { args?: string[]; breakIt?: () => void; repair?: () => void; extraDirs?: string[] }, message: RegExp): Promise<string> {
    o.breakIt?.();
    const dirs = [sp.dataDir, walDir, ...(o.extraDirs ?? [])];
    const before = treeHash(dirs);
    try {
      const again = await startServer({
        name: 'refused', dataDir: sp.dataDir, clientPort: sp.clientPort, peerPort: sp.peerPort, waitReady: false,
        args: o.args ?? ['--wal-dir', walDir],
      });
      expect(await Promise.race([again.exited, sleep(20_000).then(() => 'still running')])).toBe(1);
      const out = again.output.join('\n');
      expect(out).toMatch(message);
      expect(treeHash(dirs)).toEqual(before);
      return out;
    } finally {
      o.repair?.();
    }
  }

  const waysOut = /restore its data directory from a backup \(`etcetera snapshot restore FILE --data-dir NEW-DIR`.*or remove it from the cluster \(`etcdctl member remove [0-9a-f]+`\), wipe its data directory and join again with --server; if it is the last member of its cluster, `--cluster-reset --cluster-reset-restore-path FILE`/;

  it('a complete record with a CRC mismatch in the middle of the log', async () => {
    const original = readFileSync(segment);
    const out = await refused({
      breakIt: () => {
        const bytes = Buffer.from(original);
        const middle = recordOffsets(bytes).filter((r) => r.type === 1)[5]!;
        for (let i = 0; i < 4; i++) bytes[middle.at + 16 + ((i * 5) % middle.length)]! ^= 0xa5;
        writeFileSync(segment, bytes);
      },
      repair: () => writeFileSync(segment, original),
    }, /CRC mismatch in a complete record \(walpb: crc mismatch\).*; no file was changed\. This member cannot recover on its own/);
    expect(out).toMatch(waysOut);
  }, 60_000);

  it('a damaged last record that looks torn but held an entry the backend applied (found by the read-only backend probe)', async () => {
    const original = readFileSync(segment);
    const out = await refused({
      breakIt: () => {
        const bytes = Buffer.from(original);
        const record = recordOffsets(bytes).filter((r) => r.type === 1).pop()!;
        const sector = Math.ceil((record.at + 16) / 512) * 512;
        expect(sector + 512).toBeLessThan(record.at + 16 + record.length);
        bytes.fill(0, sector, sector + 512);
        writeFileSync(segment, bytes);
      },
      repair: () => writeFileSync(segment, original),
    }, /committed entries are missing \(the readable log ends at index \d+, the backend already applied index \d+\)/);
    expect(out).toMatch(waysOut);
    expect(out).not.toMatch(/torn tail/);
  }, 60_000);

  it('a --token other than the one the member joined with', async () => {
    await refused({ args: ['--wal-dir', walDir, '--token', 'another-token'] }, /--token differs from the token this member joined its cluster with/);
  }, 60_000);

  it('a --wal-dir that holds no log', async () => {
    const empty = tempDir('refused-empty-wal');
    await refused({ args: ['--wal-dir', empty], extraDirs: [empty] }, /holds no log, but the backend of this member is at index \d+: if it was started with --wal-dir, start it with the same --wal-dir/);
  }, 60_000);

  it('another live process holding the directory', async () => {
    const lock = join(walDir, 'LOCK');
    const startTime = readFileSync('/proc/self/stat', 'utf8').split(') ')[1]!.split(' ')[19];
    await refused({
      breakIt: () => writeFileSync(lock, `${process.pid} ${startTime}\n`),
      repair: () => rmSync(lock),
    }, new RegExp(`is in use by pid ${process.pid}; is another etcetera running on it\\? Stop it first`));
  }, 60_000);

  it('a client address that is taken', async () => {
    const server: Server = createServer();
    await new Promise<void>((resolve) => server!.listen(sp.clientPort, '127.0.0.1', resolve));
    try {
      await refused({}, new RegExp(`cannot listen on http://127.0.0.1:${sp.clientPort} \\(EADDRINUSE\\).*checked before opening the data directory, which was not changed`));
    } finally {
      server.close();
    }
  }, 60_000);

  it('a backend behind the log\'s snapshot, the snapshot\'s data gone (a backend restored from an older copy)', async () => {
    const db = join(sp.dataDir, 'member/db');
    const older = join(tempDir('refused-older-db'), 'db');
    cpSync(db, older, { recursive: true });
    // Moves the log's snapshot past the copy: a snapshot every 5 entries, 20 more entries.
    const on = await startServer({
      name: 'refused', dataDir: sp.dataDir, clientPort: sp.clientPort, peerPort: sp.peerPort, args: ['--wal-dir', walDir, '--snapshot-count', '5'],
    });
    const c = new Etcd3({ hosts: on.clientUrl, dialTimeout: 2000 });
    try {
      for (let i = 0; i < 20; i++) await c.put(`later${i}`).value('v');
    } finally {
      c.close();
    }
    expect(await on.kill('SIGTERM')).toBe(0);
    const newer = join(tempDir('refused-newer-db'), 'db');
    const out = await refused({
      breakIt: () => {
        renameSync(db, newer);
        cpSync(older, db, { recursive: true });
      },
      repair: () => {
        rmSync(db, { recursive: true, force: true });
        renameSync(newer, db);
      },
    }, /the backend is at index \d+, behind the log's snapshot at \d+, and the snapshot data is gone/);
    expect(out).toMatch(waysOut);
  }, 60_000);

  it('and with nothing broken, the same directory starts and serves every key', async () => {
    mkdirSync(walDir, { recursive: true });
    const again = await startServer({ name: 'refused', dataDir: sp.dataDir, clientPort: sp.clientPort, peerPort: sp.peerPort, args: ['--wal-dir', walDir] });
    const c = new Etcd3({ hosts: again.clientUrl, dialTimeout: 2000 });
    try {
      expect(await c.get('last').string()).toBe('x'.repeat(4000));
      expect(await c.get('later19').string()).toBe('v');
    } finally {
      c.close();
    }
    await again.kill('SIGTERM');
  }, 60_000);
});

describe('a witness\'s refused restart leaves its data directory byte-identical too (issue 32, item 5)', () => {
  let a: ServerProcess;
  let w: ServerProcess;
  let segment: string;
  const token = 'witness-refusals-token';

  beforeAll(async () => {
    a = await startServer({ name: 'refused-wa', args: ['--cluster-init', '--token', token] });
    w = await startServer({ name: 'refused-ww', command: 'witness', args: ['--server', a.clientUrl, '--token', token] });
    const c = new Etcd3({ hosts: a.clientUrl, dialTimeout: 2000 });
    try {
      for (let i = 0; i < 20; i++) await c.put(`k${i}`).value('v'.repeat(100));
    } finally {
      c.close();
    }
    expect(await w.kill('SIGTERM')).toBe(0);
    const walDir = join(w.dataDir, 'member/wal');
    segment = join(walDir, readdirSync(walDir).filter((n) => n.endsWith('.wal')).sort().pop()!);
  }, 90_000);

  async function refused(o: { breakIt?: () => void; repair?: () => void }, message: RegExp): Promise<string> {
    o.breakIt?.();
    const before = treeHash([w.dataDir]);
    try {
      const again = await startServer({ name: 'refused-ww', command: 'witness', dataDir: w.dataDir, clientPort: w.clientPort, peerPort: w.peerPort, waitReady: false });
      expect(await Promise.race([again.exited, sleep(20_000).then(() => 'still running')])).toBe(1);
      const out = again.output.join('\n');
      expect(out).toMatch(message);
      expect(treeHash([w.dataDir])).toEqual(before);
      return out;
    } finally {
      o.repair?.();
    }
  }

  it('a complete record with a CRC mismatch in the middle of its log, with the witness\'s own ways out', async () => {
    const original = readFileSync(segment);
    const out = await refused({
      breakIt: () => {
        const bytes = Buffer.from(original);
        const records = recordOffsets(bytes).filter((r) => r.type === 1);
        const middle = records[Math.floor(records.length / 2)]!;
        for (let i = 0; i < 4; i++) bytes[middle.at + 16 + ((i * 5) % middle.length)]! ^= 0xa5;
        writeFileSync(segment, bytes);
      },
      repair: () => writeFileSync(segment, original),
    }, /CRC mismatch in a complete record.*; no file was changed\. This witness cannot recover on its own/);
    // A witness's own ways out: no backup holds it and no reset starts from it; it is replaced (issue 33).
    expect(out).toMatch(/remove it from the cluster \(`etcdctl member remove [0-9a-f]+`\), wipe its data directory, and start it again as a witness joining the cluster \(`etcetera witness --server URL --token TOKEN`/);
    expect(out).not.toMatch(/snapshot restore|--cluster-reset|restore its data directory/);
  }, 60_000);

  it('a client address that is taken', async () => {
    const server: Server = createServer();
    await new Promise<void>((resolve) => server.listen(w.clientPort, '127.0.0.1', resolve));
    try {
      await refused({}, new RegExp(`cannot listen on http://127.0.0.1:${w.clientPort} \\(EADDRINUSE\\).*checked before opening the data directory, which was not changed`));
    } finally {
      server.close();
    }
  }, 60_000);

  it('and with nothing broken, the witness starts again', async () => {
    const again = await startServer({ name: 'refused-ww', command: 'witness', dataDir: w.dataDir, clientPort: w.clientPort, peerPort: w.peerPort });
    await again.kill('SIGTERM');
    await a.kill('SIGTERM');
  }, 60_000);
});
