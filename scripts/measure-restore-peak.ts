/**
 * How much disk LevelDB needs at peak while a member restores a received snapshot of S bytes into its
 * backend (issue 32: the snapshot receiver's admission rule, node/request/disk-room.ts snapshotRestoreBytes).
 * Run on a file system of its own (a tmpfs): `tsx scripts/measure-restore-peak.ts <dir> <old MiB> <new MiB>`.
 * The backend first holds <old MiB> of 64 KiB values (the state the snapshot replaces), then a snapshot of
 * <new MiB> (exported from another store, written to a file outside <dir>) is imported as the apply loop
 * does (KvStore.importSnapshot: clear, then write). Used bytes of the file system are sampled every ms.
 */
import { statfsSync } from 'node:fs';
import { randomBytes } from 'node:crypto';
import { mkdtemp, writeFile, rm } from 'node:fs/promises';
import { join } from 'node:path';
import { tmpdir } from 'node:os';
import { LevelBackend } from '../src/storage/level-backend.js';
import { KvStore } from '../src/mvcc/kv-store.js';

const [dir, oldMiB, newMiB] = [process.argv[2]!, Number(process.argv[3]), Number(process.argv[4])];
const valueBytes = 64 * 1024;
const used = (): number => { const s = statfsSync(dir); return (s.blocks - s.bfree) * s.bsize; };

async function fill(store: KvStore, mib: number, tag: string): Promise<void> {
  const n = Math.round((mib * 1024 * 1024) / valueBytes);
  for (let i = 0; i < n; i++) {
    const value = new Uint8Array(randomBytes(valueBytes)); // incompressible: LevelDB compresses with Snappy
    store.put({ key: new TextEncoder().encode(`/fill/${tag}/${i}`), value, lease: 0n, prevKv: false, ignoreValue: false, ignoreLease: false });
    if (i % 16 === 15) await store.flush();
  }
  await store.flush();
}

const base = used();
// The snapshot, made from a store of its own outside the measured file system.
const srcDir = await mkdtemp(join(tmpdir(), 'h41-src-'));
const src = await LevelBackend.open(join(srcDir, 'db'));
const srcStore = await KvStore.open(src);
await fill(srcStore, newMiB, 'new');
const exported = await srcStore.exportSnapshot();
const parts: Uint8Array[] = [];
for await (const c of exported.chunks()) parts.push(c);
await exported.view.close();
const snapFile = join(srcDir, 'snap.db');
await writeFile(snapFile, Buffer.concat(parts));
const S = parts.reduce((n, p) => n + p.length, 0);
await src.close();

const backend = await LevelBackend.open(join(dir, 'db'));
const store = await KvStore.open(backend);
await fill(store, oldMiB, 'old');
await store.idle();
const before = used() - base;
let peak = before;
const timer = setInterval(() => { peak = Math.max(peak, used() - base); }, 1);
const data = new Uint8Array(await (await import('node:fs/promises')).readFile(snapFile));
const t0 = performance.now();
const restored = await KvStore.importSnapshot(backend, data);
await restored.flush();
await restored.idle();
const ms = performance.now() - t0;
await new Promise((r) => setTimeout(r, 200));
clearInterval(timer);
peak = Math.max(peak, used() - base);
const after = used() - base;
await backend.close();
await rm(join(dir, 'db'), { recursive: true, force: true });
await rm(srcDir, { recursive: true, force: true });
const mib = (n: number): string => (n / 2 ** 20).toFixed(1);
console.log(JSON.stringify({ oldMiB, newMiB, snapshotMiB: mib(S), beforeMiB: mib(before), peakMiB: mib(peak), afterMiB: mib(after),
  peakOverBefore: mib(peak - before), peakPerS: (peak / S).toFixed(2), extraPerS: ((peak - before) / S).toFixed(2), ms: Math.round(ms) }));
