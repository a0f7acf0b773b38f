/**
 * JS heap bytes per key of a real server (issue 10: the 512 MiB cgroup run died of a V8 heap OOM, not of the
 * cgroup). Starts `dist/src/server/cli.js` on a temporary data dir, loads keys the way bench:compare does
 * (Txns of 100 puts, 8 in flight), takes a V8 heap snapshot (which runs a full GC first) before and after, and
 * reports the difference per key, in total and by constructor. The memory rule says memory holds indexes and
 * bounded caches only, so the number should be a small constant per key, independent of the value size.
 *
 *   npx tsx bench/heap-per-key.ts [--keys 100000] [--value-bytes 100] [--top 25]
 *
 * Needs `npm run build` first. A snapshot of a few hundred thousand keys is a few hundred MB to parse.
 */
import { spawn } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { bulkLoad } from './compare/bulk.js';
import { RawClient } from './compare/client.js';
import { encodePut } from './compare/wire.js';
import { freePort } from '../test/e2e/harness.js';

const cli = resolve(import.meta.dirname, '../dist/src/server/cli.js');

function arg(name: string, fallback: number): number {
  const i = process.argv.indexOf(`--${name}`);
  return i >= 0 ? Number(process.argv[i + 1]) : fallback;
}

const keys = arg('keys', 100_000);
const valueBytes = arg('value-bytes', 100);
const top = arg('top', 25);

interface HeapSnapshot {
  snapshot: { meta: { node_fields: string[]; node_types: [string[], ...unknown[]] } };
  nodes: number[];
  strings: string[];
}

/** Self size summed by "type:constructor" (V8's node name for objects, the type for strings, arrays, code). */
function bytesByKind(file: string): Map<string, { bytes: number; count: number }> {
  const snap = JSON.parse(readFileSync(file, 'utf8')) as HeapSnapshot;
  const fields = snap.snapshot.meta.node_fields;
  const types = snap.snapshot.meta.node_types[0];
  const [typeAt, nameAt, sizeAt] = ['type', 'name', 'self_size'].map((f) => fields.indexOf(f));
  const out = new Map<string, { bytes: number; count: number }>();
  for (let i = 0; i < snap.nodes.length; i += fields.length) {
    const type = types[snap.nodes[i + typeAt!]!]!;
    // Object names are constructors; strings and code are grouped by type only (their names are contents).
    const kind = type === 'object' || type === 'native' || type === 'closure' || type === 'array' || type === 'hidden' ? `${type}:${snap.strings[snap.nodes[i + nameAt!]!]}` : type;
    const e = out.get(kind) ?? { bytes: 0, count: 0 };
    e.bytes += snap.nodes[i + sizeAt!]!;
    e.count++;
    out.set(kind, e);
  }
  return out;
}

async function snapshotOf(pid: number, dir: string): Promise<string> {
  const before = new Set(readdirSync(dir));
  process.kill(pid, 'SIGUSR2');
  for (;;) {
    await new Promise((r) => setTimeout(r, 500));
    const file = readdirSync(dir).find((f) => f.endsWith('.heapsnapshot') && !before.has(f));
    if (file === undefined) continue;
    const path = join(dir, file);
    // Written in one go by the server's main thread; wait until the size stops changing.
    const size = statSync(path).size;
    await new Promise((r) => setTimeout(r, 1000));
    if (statSync(path).size === size && size > 0) return path;
  }
}

async function main(): Promise<void> {
  const work = mkdtempSync(join(tmpdir(), 'heap-per-key-'));
  const [client, peer] = [await freePort(), await freePort()];
  const c = `http://127.0.0.1:${client}`;
  const p = `http://127.0.0.1:${peer}`;
  const proc = spawn(process.execPath, ['--heapsnapshot-signal=SIGUSR2', `--diagnostic-dir=${work}`, cli, 'server',
    '--name', 's', '--data-dir', join(work, 'data'), '--listen-client-urls', c, '--listen-peer-urls', p, '--log-level', 'error'],
  { stdio: ['ignore', 'ignore', 'inherit'] });
  const conn = new RawClient(c);
  try {
    for (let tries = 0; ; tries++) {
      try {
        await conn.put(encodePut(Buffer.from('heap/health'), Buffer.from('1')), 1000);
        break;
      } catch (e) {
        if (tries > 100) throw e;
        await new Promise((r) => setTimeout(r, 200));
      }
    }
    // A few keys first, so the baseline has every code path (and its lazily built objects) warmed up.
    await bulkLoad(conn, 'warm/', 1000, valueBytes);
    const base = bytesByKind(await snapshotOf(proc.pid!, work));
    const t0 = performance.now();
    const r = await bulkLoad(conn, 'small/', keys, valueBytes);
    if (r.error !== undefined) throw new Error(`load failed after ${r.loaded} keys: ${r.error}`);
    const loadS = (performance.now() - t0) / 1000;
    // Let the write-behind flush and the Raft log's in-memory tail settle as it would at rest.
    await new Promise((res) => setTimeout(res, 3000));
    const after = bytesByKind(await snapshotOf(proc.pid!, work));
    const rows = [...after].map(([kind, a]) => {
      const b = base.get(kind) ?? { bytes: 0, count: 0 };
      return { kind, bytes: a.bytes - b.bytes, count: a.count - b.count };
    });
    rows.sort((x, y) => y.bytes - x.bytes);
    const total = rows.reduce((s, x) => s + x.bytes, 0);
    console.log(`${keys.toLocaleString('en-US')} keys × ${valueBytes} B loaded in ${loadS.toFixed(1)} s`);
    console.log(`JS heap: ${(total / keys).toFixed(1)} bytes/key (${(total / 2 ** 20).toFixed(1)} MiB over the baseline)`);
    console.log('bytes/key  objects/key  kind');
    for (const x of rows.slice(0, top)) {
      console.log(`${(x.bytes / keys).toFixed(1).padStart(9)}  ${(x.count / keys).toFixed(3).padStart(11)}  ${x.kind}`);
    }
  } finally {
    conn.close();
    proc.kill('SIGKILL');
    await new Promise((r) => proc.once('exit', r));
    rmSync(work, { recursive: true, force: true });
  }
}

await main();
