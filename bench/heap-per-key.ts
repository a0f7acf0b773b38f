/**
 * JS heap bytes per key of a real server (issue 10: the 512 MiB cgroup run died of a V8 heap OOM, not of the
 * cgroup). Starts `dist/src/main/cli.js` on a temporary data dir, loads keys the way bench:compare does
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

const cli = resolve(import.meta.dirname, '../dist/src/main/cli.js');

function arg(name: string, fallback: number): number {
  const i = process.argv.indexOf(`--${name}`);
  return i >= 0 ? Number(process.argv[i + 1]) : fallback;
}

const keys = arg('keys', 100_000);
const valueBytes = arg('value-bytes', 100);
const top = arg('top', 25);

/**
 * Self size summed by "type:name" (V8's name is the constructor for objects; strings and code are grouped by
 * type only, their names are their contents). The file is read as bytes and its node table scanned in place:
 * a snapshot of a million keys is larger than the longest string V8 can make, so JSON.parse cannot take it.
 */
function bytesByKind(file: string): Map<string, { bytes: number; count: number }> {
  const buf = readFileSync(file);
  const nodesAt = buf.indexOf('"nodes":[');
  const edgesAt = buf.indexOf('"edges":[', nodesAt);
  const stringsAt = buf.indexOf('"strings":[', edgesAt);
  const head = buf.subarray(buf.indexOf('{"snapshot":') + '{"snapshot":'.length, nodesAt).toString().trim().replace(/,$/, '');
  const meta = (JSON.parse(head) as { meta: { node_fields: string[]; node_types: [string[], ...unknown[]] } }).meta;
  const strings = JSON.parse(buf.subarray(stringsAt + '"strings":'.length, buf.lastIndexOf(']') + 1).toString()) as string[];
  const fields = meta.node_fields;
  const types = meta.node_types[0];
  const [typeAt, nameAt, sizeAt] = ['type', 'name', 'self_size'].map((f) => fields.indexOf(f)) as [number, number, number];
  const out = new Map<string, { bytes: number; count: number }>();
  const node = new Array<number>(fields.length).fill(0);
  let field = 0;
  let n = -1;
  for (let i = nodesAt + '"nodes":['.length; i < edgesAt; i++) {
    const c = buf[i]!;
    if (c >= 0x30 && c <= 0x39) {
      n = (n < 0 ? 0 : n * 10) + (c - 0x30);
      continue;
    }
    if (n < 0) continue;
    node[field++] = n;
    n = -1;
    if (field < fields.length) continue;
    field = 0;
    const type = types[node[typeAt]!]!;
    const kind = ['object', 'native', 'closure', 'array', 'hidden'].includes(type) ? `${type}:${strings[node[nameAt]!]}` : type;
    const e = out.get(kind) ?? { bytes: 0, count: 0 };
    e.bytes += node[sizeAt]!;
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
    const baseBytes = [...base].filter(([k]) => !k.startsWith('native:')).reduce((s, [, e]) => s + e.bytes, 0);
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
    // ArrayBuffer backing stores ("native:system / JSArrayBufferData") live outside V8's heap: they count in
    // RSS but not against --max-old-space-size, which is what a V8 heap OOM hits.
    const isNative = (kind: string): boolean => kind.startsWith('native:');
    const sum = (f: (kind: string) => boolean): number => rows.filter((x) => f(x.kind)).reduce((s, x) => s + x.bytes, 0);
    const [heap, native] = [sum((k) => !isNative(k)), sum(isNative)];
    const mib = (b: number): string => `${(b / 2 ** 20).toFixed(1)} MiB`;
    console.log(`${keys.toLocaleString('en-US')} keys × ${valueBytes} B loaded in ${loadS.toFixed(1)} s`);
    console.log(`V8 heap: ${(heap / keys).toFixed(1)} bytes/key (${mib(heap)} over the baseline of ${mib(baseBytes)}); ` +
      `native backing stores: ${(native / keys).toFixed(1)} bytes/key (${mib(native)})`);
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
