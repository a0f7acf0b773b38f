/**
 * Snapshots at scale, checked by etcd itself (issue 21, item 6), shared by the regression test
 * (snapshot-scale.test.ts, a CI-sized shape) and the 200,000-key run (bench/snapshot-scale.ts).
 *
 * The data set is built in bulk by the production restore path (importRevisions, what `etcetera snapshot
 * restore` runs): every key written, half of them updated, a fifth deleted and half of those re-created (several
 * revisions and generations per key, two-put revisions), values of 1 byte to 1.4 MiB, a key of 32 KiB, leases
 * with attached keys. A running member then adds a physical compaction, a new lease with keys, a delete and a
 * txn through gRPC. From there:
 *   1. our snapshots, Maintenance.Snapshot (saved by etcdctl) and `etcetera snapshot save`: `etcdctl snapshot
 *      status` agrees with `etcetera snapshot status` (hash, revision, keys, size) on both;
 *   2. `etcdctl snapshot restore` of ours, then real etcd serves the same keys, values, revisions (current and
 *      historical), compaction, leases (with their keys) and HashKV;
 *   3. the reverse: that etcd defragments (bbolt rewrites every page itself), `etcdctl snapshot save`,
 *      `etcetera snapshot status` agrees with etcdctl, `etcetera snapshot restore`, and we serve the same again.
 */
import { createHash } from 'node:crypto';
import { join } from 'node:path';
import { Etcd3 } from 'etcd3';
import { utf8 } from '../../src/base/bytes.js';
import { BboltReader, type BucketStats } from '../../src/bbolt/index.js';
import { importRevisions } from '../../src/backup/import.js';
import type { RevisionRecord } from '../../src/backup/revision-record.js';
import type { LeaseRecord } from '../../src/mvcc/lease-codec.js';
import { freePort, runCli, startServer, waitFor, type ServerProcess } from '../e2e/harness.js';
import { etcdctl, startEtcd } from './etcd-ref.js';

export interface ScaleShape {
  /** Distinct keys of the first round. */
  keys: number;
  /** Small values are 1..valueBytesMax bytes. */
  valueBytesMax: number;
  leases: number;
}

/** The large values, each on its own key of the update round: overflow pages from 2 to 359 pages long. */
export const bigValueBytes = [Math.floor(1.4 * 1024 * 1024), 700_000, 100_000, 9_000, 4_097];
/** bbolt's MaxKeySize: the longest key bbolt could ever index, as an etcd key (in a KeyValue value here). */
export const longKeyBytes = 32 * 1024;
const leaseTtlSeconds = 3600;
/** A lease restored with its full TTL has (much) more than this left when the dump reads it. */
const leaseAliveSecondsMin = leaseTtlSeconds - 600;
/** Any one tool run (etcdctl, the etcetera CLI) at the 200,000-key size; a whole save or HashKV included. */
const toolSecondsMax = 600;
const leaseIdFirst = 0x7e57_0000n;
/** Keys per Range page while dumping: a page holds at most one big value (they are far apart). */
const dumpPageKeys = 1000;
/** A client's receive limit above the largest page (etcd's own server limit is 2 GiB). */
const clientReceiveBytesMax = 64 * 1024 * 1024;

function keyOf(i: number): Uint8Array {
  return utf8(`/registry/scale/${i.toString().padStart(7, '0')}`);
}

/** A cheap deterministic byte stream: the same shape gives the same data everywhere. */
function valueOf(i: number, round: number, bytes: number): Uint8Array {
  const out = Buffer.alloc(bytes);
  let x = (i * 2654435761 + round * 40503 + 1) >>> 0;
  for (let j = 0; j < bytes; j++) {
    x = (x * 1103515245 + 12345) >>> 0;
    out[j] = 0x21 + ((x >>> 16) % 94);
  }
  return out;
}

export interface ScaleMarks {
  /** After the first round (every key written once). */
  created: number;
  /** The middle of the update round: compacted at. */
  compactAt: number;
  /** After the update round (a historical view after the compaction). */
  updated: number;
  /** The last imported revision. */
  last: number;
}

/** The records of a shape, in revision order, and the revisions of its rounds (filled in as it runs). */
export function scaleRecords(shape: ScaleShape, marks: ScaleMarks): Iterable<RevisionRecord> {
  return (function* () {
    const createRev = new Float64Array(shape.keys);
    const version = new Uint32Array(shape.keys);
    let rev = 1;
    // Keys 3, 53, 103, ... (never deleted) spread over the leases round-robin.
    const leaseOf = (i: number): bigint => (i % 50 === 3 ? leaseIdFirst + BigInt(Math.floor(i / 50) % shape.leases) : 0n);
    const put = (i: number, round: number, value: Uint8Array, sameRevision: boolean): RevisionRecord => {
      if (!sameRevision) rev++;
      if (version[i] === 0) createRev[i] = rev;
      version[i]!++;
      return { key: keyOf(i), value, createRevision: createRev[i]!, modRevision: rev, version: version[i]!, lease: round === 0 ? leaseOf(i) : 0n, tombstone: false };
    };
    const small = (i: number, round: number): Uint8Array => valueOf(i, round, 1 + ((i * 7919 + round * 31) % shape.valueBytesMax));
    rev++;
    yield { key: utf8(`/registry/long/${'k'.repeat(longKeyBytes - 15)}`), value: utf8('under the longest key'), createRevision: rev, modRevision: rev, version: 1, lease: 0n, tombstone: false };
    // Round 0: every key; every 1000th revision holds two puts (a txn's sub-revisions).
    for (let i = 0; i < shape.keys; i++) yield put(i, 0, small(i, 0), i % 1000 === 1);
    marks.created = rev;
    // Round 1: every second key updated; the big values land on keys spread over the key space, on both sides
    // of the compaction, each on a key that is updated here and never deleted (i % 10 === 2).
    const bigAt = new Map(bigValueBytes.map((bytes, n) => [10 * Math.floor(((n + 0.5) * shape.keys) / (10 * bigValueBytes.length)) + 2, bytes]));
    for (let i = 0; i < shape.keys; i += 2) {
      const big = bigAt.get(i);
      yield put(i, 1, big === undefined ? small(i, 1) : valueOf(i, 1, big), false);
      if (i === 2 * Math.floor(shape.keys / 4)) marks.compactAt = rev;
    }
    marks.updated = rev;
    // Round 2: every fifth key deleted; every tenth then re-created (a new generation).
    for (let i = 0; i < shape.keys; i += 5) {
      rev++;
      version[i] = 0;
      yield { key: keyOf(i), value: new Uint8Array(0), createRevision: 0, modRevision: rev, version: 0, lease: 0n, tombstone: true };
    }
    for (let i = 0; i < shape.keys; i += 10) yield put(i, 2, small(i, 2), false);
    marks.last = rev;
  })();
}

export function scaleLeases(shape: ScaleShape): LeaseRecord[] {
  return Array.from({ length: shape.leases }, (_, j) => ({ id: leaseIdFirst + BigInt(j), ttlSeconds: leaseTtlSeconds, remainingTtlSeconds: 0 }));
}

/** Everything a client sees, reduced to comparable lines (values by SHA-256) and HashKV. */
export interface ScaleDump {
  revision: string;
  keyCount: number;
  /** One line per live key, in key order. */
  kvs: string[];
  /** One line per key as of `marks.updated` (after the compaction). */
  history: string[];
  compactedRangeError: string;
  leases: string[];
  hashKv: { current: unknown; updated: unknown };
}

function kvLine(kv: { key: Buffer; value: Buffer; create_revision: string; mod_revision: string; version: string; lease: string }): string {
  const key = kv.key.length > 64 ? `${kv.key.subarray(0, 32).toString()}…(${kv.key.length} bytes)` : kv.key.toString();
  const value = createHash('sha256').update(kv.value).digest('hex').slice(0, 16);
  return `${key} ${kv.value.length}:${value} c${kv.create_revision} m${kv.mod_revision} v${kv.version} l${kv.lease}`;
}

async function rangeLines(c: Etcd3, revision: number | undefined): Promise<string[]> {
  const lines: string[] = [];
  let from = Buffer.from([0]);
  for (;;) {
    const page = await c.kv.range({ key: from, range_end: Buffer.from([0]), limit: String(dumpPageKeys), revision: revision === undefined ? undefined : String(revision) });
    for (const kv of page.kvs) lines.push(kvLine(kv));
    if (!page.more || page.kvs.length === 0) return lines;
    from = Buffer.concat([page.kvs[page.kvs.length - 1]!.key, Buffer.from([0])]);
  }
}

/** etcdctl with its command timeout and our process timeout both at toolSecondsMax. */
function tool(args: string[], endpoint?: string): Promise<{ stdout: string }> {
  return etcdctl([`--command-timeout=${toolSecondsMax}s`, ...args], endpoint, toolSecondsMax * 1000);
}

async function hashKv(endpoint: string, revision: number): Promise<unknown> {
  const out = JSON.parse((await tool(['endpoint', 'hashkv', `--rev=${revision}`, '-w', 'json'], endpoint.replace(/^http:\/\//, ''))).stdout) as Array<{ HashKV: { hash: number; compact_revision: number } }>;
  return { hash: out[0]!.HashKV.hash, compactRevision: out[0]!.HashKV.compact_revision };
}

export async function dumpScale(endpoint: string, marks: ScaleMarks): Promise<ScaleDump> {
  const c = new Etcd3({ hosts: endpoint, grpcOptions: { 'grpc.max_receive_message_length': clientReceiveBytesMax } });
  try {
    const head = await c.kv.range({ key: Buffer.from([0]), range_end: Buffer.from([0]), count_only: true });
    const kvs = await rangeLines(c, undefined);
    const history = await rangeLines(c, marks.updated);
    const compacted = await c.kv.range({ key: Buffer.from([0]), range_end: Buffer.from([0]), revision: String(marks.compactAt - 1) }).then(() => 'no error', (err: Error) => err.message);
    const leases = await c.leaseClient.leaseLeases({});
    const ttls = await Promise.all(leases.leases.map((l) => c.leaseClient.leaseTimeToLive({ ID: l.ID, keys: true })));
    const revision = Number(head.header.revision);
    return {
      revision: head.header.revision,
      keyCount: Number(head.count),
      kvs,
      history,
      compactedRangeError: /compacted/.test(compacted) ? 'compacted' : compacted,
      leases: ttls.map((t) => `${t.ID} granted ${t.grantedTTL} alive ${Number(t.TTL) > leaseAliveSecondsMin} keys ${t.keys.map((k) => k.toString()).sort().join(',')}`).sort(),
      hashKv: { current: await hashKv(endpoint, revision), updated: await hashKv(endpoint, marks.updated) },
    };
  } finally {
    c.close();
  }
}

/** A readable difference between two dumps: the first differing line of each part. */
export function dumpDifference(a: ScaleDump, b: ScaleDump): string | undefined {
  const diffs: string[] = [];
  for (const part of ['kvs', 'history', 'leases'] as const) {
    const x = a[part];
    const y = b[part];
    const i = x.findIndex((line, n) => line !== y[n]);
    if (i >= 0 || x.length !== y.length) diffs.push(`${part}: ${x.length} vs ${y.length} lines; first difference at ${i}: ${x[i]} | ${y[i]}`);
  }
  for (const part of ['revision', 'keyCount', 'compactedRangeError', 'hashKv'] as const) {
    if (JSON.stringify(a[part]) !== JSON.stringify(b[part])) diffs.push(`${part}: ${JSON.stringify(a[part])} vs ${JSON.stringify(b[part])}`);
  }
  return diffs.length === 0 ? undefined : diffs.join('\n');
}

export interface SnapshotStatusJson {
  hash: number;
  revision: number;
  totalKey: number;
  totalSize: number;
}

async function statuses(file: string): Promise<{ etcdctl: SnapshotStatusJson; etcetera: SnapshotStatusJson }> {
  const theirs = JSON.parse((await tool(['snapshot', 'status', file, '-w', 'json'])).stdout) as SnapshotStatusJson;
  const r = await runCli(['snapshot', 'status', file, '-w', 'json'], toolSecondsMax * 1000);
  if (r.code !== 0) throw new Error(`etcetera snapshot status ${file}: ${r.stderr}`);
  return { etcdctl: theirs, etcetera: JSON.parse(r.stdout) as SnapshotStatusJson };
}

/** The shape of the `key` bucket's B+tree in a snapshot file, and of the whole file. */
export async function keyTreeStats(file: string): Promise<BucketStats & { fileBytes: number }> {
  const reader = await BboltReader.open(file);
  try {
    const header = await reader.bucketHeader(utf8('key'));
    if (header === undefined) throw new Error(`${file}: no key bucket`);
    return { ...(await reader.bucketStats(header)), fileBytes: reader.sizeBytes };
  } finally {
    await reader.close();
  }
}

export interface ScaleReport {
  marks: ScaleMarks;
  records: number;
  /** The dump of the member the data was built on, after the live changes. */
  expected: ScaleDump;
  ours: { maintenance: { etcdctl: SnapshotStatusJson; etcetera: SnapshotStatusJson }; cli: { etcdctl: SnapshotStatusJson; etcetera: SnapshotStatusJson }; tree: BucketStats & { fileBytes: number } };
  /** etcd serving `etcdctl snapshot restore` of our Maintenance.Snapshot. */
  etcdFromOurs: ScaleDump;
  etcds: { status: { etcdctl: SnapshotStatusJson; etcetera: SnapshotStatusJson }; tree: BucketStats & { fileBytes: number } };
  /** We, serving `etcetera snapshot restore` of etcd's (defragmented) snapshot. */
  oursFromEtcd: ScaleDump;
  secondsPerStep: Record<string, number>;
}

async function cli(args: string[]): Promise<string> {
  const r = await runCli(args, toolSecondsMax * 1000);
  if (r.code !== 0) throw new Error(`etcetera ${args.join(' ')} (exit ${r.code}): ${r.stderr}\n${r.stdout}`);
  return r.stdout;
}

/** Starts tried again on a port another test run took between our pick and the bind. */
const bindAttemptsMax = 3;

/**
 * A restored data directory names its peer port, so the harness cannot retry its start on a fresh one; the
 * client and metrics ports it picks can still be taken by a parallel test run before the bind (EADDRINUSE),
 * and a start that failed there left the directory as it was: start again, on newly picked ports.
 */
async function bindRetried<T>(start: () => Promise<T>): Promise<T> {
  for (let attempt = 1; ; attempt++) {
    try {
      return await start();
    } catch (err) {
      if (attempt >= bindAttemptsMax || !/EADDRINUSE|address already in use/.test(String(err))) throw err;
    }
  }
}

async function restoreOptions(name: string): Promise<{ peerPort: number; args: string[] }> {
  const peerPort = await freePort();
  const peer = `http://127.0.0.1:${peerPort}`;
  return { peerPort, args: ['--name', name, '--initial-cluster', `${name}=${peer}`, '--initial-advertise-peer-urls', peer] };
}

/** The whole round trip in `dir` (kept for the caller to remove); every process started here is stopped here. */
export async function runScale(shape: ScaleShape, dir: string, log: (line: string) => void = () => {}): Promise<ScaleReport> {
  const secondsPerStep: Record<string, number> = {};
  let t = performance.now();
  const step = (name: string): void => {
    const now = performance.now();
    secondsPerStep[name] = Math.round(now - t) / 1000;
    log(`${name}: ${secondsPerStep[name]} s`);
    t = now;
  };
  const marks: ScaleMarks = { created: 0, compactAt: 0, updated: 0, last: 0 };
  const built = await restoreOptions('scale');
  const dataDir = join(dir, 'built');
  const imported = await importRevisions(dataDir, scaleRecords(shape, marks), {
    cluster: { name: 'scale', initialCluster: [{ name: 'scale', peerUrls: [`http://127.0.0.1:${built.peerPort}`] }], clusterToken: 'scale-test' },
    leases: scaleLeases(shape),
  });
  step('bulk build (importRevisions)');

  let member: ServerProcess | undefined = await bindRetried(() => startServer({ name: 'scale', dataDir, peerPort: built.peerPort }));
  let expected: ScaleDump;
  const maintenanceFile = join(dir, 'ours-maintenance.db');
  const cliFile = join(dir, 'ours-cli.db');
  try {
    const c = new Etcd3({ hosts: member.clientUrl });
    try {
      await c.kv.compact({ revision: String(marks.compactAt), physical: true });
      const lease = await c.leaseClient.leaseGrant({ TTL: leaseTtlSeconds });
      for (const k of ['live/leased-a', 'live/leased-b']) await c.kv.put({ key: Buffer.from(k), value: Buffer.from(k), lease: lease.ID });
      await c.kv.deleteRange({ key: Buffer.from(keyOf(1)) });
      await c.kv.txn({ compare: [], success: ['t/a', 't/b'].map((k) => ({ request_put: { key: Buffer.from(k), value: Buffer.from(k) } })), failure: [] });
    } finally {
      c.close();
    }
    // The member's own entries at its first term (its attributes, the cluster version) change the snapshot's
    // meta bucket; on a fast machine they could land between the two saves below. Wait for both first.
    const settled = member;
    await waitFor('the member published and set the cluster version', async () =>
      ['"published member attributes', '"cluster version set'].every((line) => settled.output.some((l) => l.includes(line))),
    );
    step('start, compact, live writes');
    expected = await dumpScale(member.clientUrl, marks);
    step('dump the source member');
    await tool(['snapshot', 'save', maintenanceFile], `127.0.0.1:${member.clientPort}`);
    step('etcdctl snapshot save (Maintenance.Snapshot)');
    await cli(['snapshot', 'save', cliFile, '--endpoints', member.clientUrl]);
    step('etcetera snapshot save');
  } finally {
    await member.kill('SIGTERM');
    member = undefined;
  }
  const ours = { maintenance: await statuses(maintenanceFile), cli: await statuses(cliFile), tree: await keyTreeStats(maintenanceFile) };
  step('snapshot status x4 and tree stats');

  const restoredEtcd = join(dir, 'etcd-data');
  const ref = await restoreOptions('ref');
  await tool(['snapshot', 'restore', maintenanceFile, '--data-dir', restoredEtcd, ...ref.args]);
  step('etcdctl snapshot restore');
  const etcd = await bindRetried(() => startEtcd({ name: 'ref', dataDir: restoredEtcd, peerPort: ref.peerPort }));
  let etcdFromOurs: ScaleDump;
  const etcdFile = join(dir, 'etcd.db');
  try {
    step('etcd start');
    etcdFromOurs = await dumpScale(etcd.endpoint, marks);
    step('dump etcd');
    await tool(['defrag'], etcd.endpoint);
    await tool(['snapshot', 'save', etcdFile], etcd.endpoint);
    step('etcd defrag + snapshot save');
  } finally {
    await etcd.stop();
  }
  const etcds = { status: await statuses(etcdFile), tree: await keyTreeStats(etcdFile) };
  step('etcd snapshot status x2 and tree stats');

  const back = await restoreOptions('back');
  const backDir = join(dir, 'back');
  await cli(['snapshot', 'restore', etcdFile, '--data-dir', backDir, ...back.args]);
  step('etcetera snapshot restore');
  const restored = await bindRetried(() => startServer({ name: 'back', dataDir: backDir, peerPort: back.peerPort }));
  let oursFromEtcd: ScaleDump;
  try {
    step('etcetera start');
    oursFromEtcd = await dumpScale(restored.clientUrl, marks);
    step('dump etcetera');
  } finally {
    await restored.kill('SIGTERM');
  }
  return { marks, records: imported.records, expected, ours, etcdFromOurs, etcds, oursFromEtcd, secondsPerStep };
}

export interface ScaleCheck {
  what: string;
  ok: boolean;
  detail?: string;
}

const same = (a: unknown, b: unknown): boolean => JSON.stringify(a) === JSON.stringify(b);

/** Every comparison the round trip exists for; the test expects all to pass, the bench prints them. */
export function scaleChecks(r: ScaleReport, shape: ScaleShape): ScaleCheck[] {
  const e = r.expected;
  const diff = (other: ScaleDump): ScaleCheck['detail'] => dumpDifference(e, other);
  return [
    { what: 'etcdctl and etcetera snapshot status agree on our Maintenance.Snapshot', ok: same(r.ours.maintenance.etcdctl, r.ours.maintenance.etcetera) },
    { what: 'etcdctl and etcetera snapshot status agree on `etcetera snapshot save`', ok: same(r.ours.cli.etcdctl, r.ours.cli.etcetera) },
    { what: 'both of our snapshots hold the same buckets, keys and values (hash, revision, key count)', ok: same({ ...r.ours.cli.etcdctl, totalSize: 0 }, { ...r.ours.maintenance.etcdctl, totalSize: 0 }), detail: `cli ${JSON.stringify(r.ours.cli.etcdctl)} maintenance ${JSON.stringify(r.ours.maintenance.etcdctl)}` },
    { what: "etcdctl and etcetera snapshot status agree on etcd's snapshot", ok: same(r.etcds.status.etcdctl, r.etcds.status.etcetera) },
    { what: 'the snapshot revision is the revision served', ok: String(r.ours.maintenance.etcdctl.revision) === e.revision && String(r.etcds.status.etcdctl.revision) === e.revision },
    // Not vacuous: the dump holds what the data set was built to hold.
    { what: 'the source serves every live key, the 32 KiB key and the big values', ok: e.keyCount === e.kvs.length && e.kvs.some((l) => l.includes(`(${longKeyBytes} bytes)`)) && bigValueBytes.every((b) => e.kvs.some((l) => l.includes(` ${b}:`))), detail: `${e.keyCount} keys` },
    { what: 'the historical view differs from the current one, and older revisions are compacted', ok: !same(e.history, e.kvs) && e.compactedRangeError === 'compacted' },
    { what: 'every lease is alive with its keys', ok: e.leases.length === shape.leases + 1 && e.leases.every((l) => / alive true keys \S/.test(l)), detail: e.leases.slice(0, 2).join('; ') },
    { what: 'etcd serves our snapshot identically (keys, values, revisions, history, compaction, leases, HashKV)', ok: diff(r.etcdFromOurs) === undefined, detail: diff(r.etcdFromOurs) },
    { what: "we serve etcd's snapshot identically", ok: diff(r.oursFromEtcd) === undefined, detail: diff(r.oursFromEtcd) },
  ];
}
