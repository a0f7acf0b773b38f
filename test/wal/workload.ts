/**
 * A seeded, scripted WAL workload for crash tests, with an independent model of what recovery may return.
 *
 * The workload issues saves (some concurrently, so group commit batches them), suffix truncations by a new
 * term, hard-state-only saves, snapshots followed by releaseTo. Every save is recorded as logical operations
 * in record order (snapshot meta, entries, hard state). After a crash, the recovered state must equal the
 * model after some prefix of those operations that includes every acknowledged save (W1, W6).
 */
import { expect } from 'vitest';
import { Prng } from '../../src/base/prng.js';
import type { Entry, HardState, SnapshotMeta } from '../../src/raft/types.js';
import type { SaveRequest, Wal, WalState } from '../../src/wal/wal.js';

export type LogicalOp =
  | { kind: 'snap'; meta: SnapshotMeta; data: Uint8Array | undefined }
  | { kind: 'entries'; entries: Entry[] }
  | { kind: 'hs'; hs: HardState };

export interface WorkloadRecord {
  ops: LogicalOp[];
  /** Per save (in call order): the number of ops up to and including it, and whether it was acknowledged. */
  saves: { opsEnd: number; acked: boolean }[];
}

const conf = { voters: [1n, 2n, 3n], learners: [] as bigint[] };

/** Runs the workload until it ends or the WAL fails (a crash). Never throws for WAL failures. */
export async function runWorkload(wal: Wal, seed: number, steps: number): Promise<WorkloadRecord> {
  const rng = new Prng(seed);
  const rec: WorkloadRecord = { ops: [], saves: [] };
  const terms = new Map<number, number>();
  let last = 0;
  let commit = 0;
  let term = 1;
  let snapIndex = 0;
  const bytes = (n: number): Uint8Array => Uint8Array.from({ length: n }, () => rng.int(256));
  const track = (request: SaveRequest, data?: Uint8Array): SaveRequest => {
    if (request.snapshotMeta) rec.ops.push({ kind: 'snap', meta: request.snapshotMeta, data });
    if (request.entries?.length) rec.ops.push({ kind: 'entries', entries: [...request.entries] });
    if (request.hardState) rec.ops.push({ kind: 'hs', hs: request.hardState });
    rec.saves.push({ opsEnd: rec.ops.length, acked: false });
    return request;
  };
  const issue = (p: Promise<void>, i: number): Promise<boolean> =>
    p.then(
      () => {
        rec.saves[i]!.acked = true;
        return true;
      },
      () => false,
    );
  const append = (from: number, n: number): SaveRequest => {
    const entries: Entry[] = [];
    for (let i = 0; i < n; i++) {
      entries.push({ term, index: from + i, type: 0, data: bytes(rng.int(300)) });
      terms.set(from + i, term);
    }
    last = from + n - 1;
    commit = Math.min(last, commit + rng.int(3));
    return { entries, hardState: { term, vote: 1n, commit } };
  };
  for (let step = 0; step < steps; step++) {
    const r = rng.next();
    const batch: Promise<boolean>[] = [];
    if (r < 0.55) {
      const k = 1 + rng.int(4);
      for (let j = 0; j < k; j++) batch.push(issue(wal.save(track(append(last + 1, 1 + rng.int(3)))), rec.saves.length - 1));
    } else if (r < 0.7 && last > commit) {
      term++; // a new leader overwrites the uncommitted suffix
      const from = commit + 1 + rng.int(last - commit);
      batch.push(issue(wal.save(track(append(from, 1 + rng.int(2)))), rec.saves.length - 1));
    } else if (r < 0.85 && commit > snapIndex) {
      snapIndex = commit;
      const meta = { index: commit, term: terms.get(commit)!, confState: conf };
      const data = bytes(50 + rng.int(200));
      track({ snapshotMeta: meta }, data);
      const ok = await issue(wal.saveSnapshot({ meta, data }), rec.saves.length - 1);
      if (!ok) return rec;
      const released = await wal.releaseTo(snapIndex).then(() => true, () => false);
      if (!released) return rec;
      continue;
    } else {
      commit = Math.min(last, commit + 1);
      batch.push(issue(wal.save(track({ hardState: { term, vote: 1n, commit } })), rec.saves.length - 1));
    }
    const results = await Promise.all(batch);
    if (results.includes(false)) return rec;
  }
  return rec;
}

interface ModelState {
  hs: HardState;
  snap: SnapshotMeta;
  log: Map<number, Entry>;
}

function signature(s: { hs: HardState; snap: SnapshotMeta; entries: Entry[] }): string {
  const es = s.entries.map((e) => `${e.index}/${e.term}/${Buffer.from(e.data).toString('hex')}`).join(',');
  return `hs ${s.hs.term}/${s.hs.vote}/${s.hs.commit} snap ${s.snap.index}/${s.snap.term} [${es}]`;
}

function modelSignature(m: ModelState): string {
  const entries = [...m.log.values()].filter((e) => e.index > m.snap.index).sort((a, b) => a.index - b.index);
  return signature({ hs: m.hs, snap: m.snap, entries });
}

function applyOp(m: ModelState, op: LogicalOp): void {
  if (op.kind === 'hs') m.hs = op.hs;
  else if (op.kind === 'snap') m.snap = op.meta;
  else {
    const from = op.entries[0]!.index;
    for (const i of [...m.log.keys()]) if (i >= from) m.log.delete(i);
    for (const e of op.entries) m.log.set(e.index, e);
  }
}

/** Asserts acknowledgements came in call order, and the recovered state is an allowed prefix. */
export async function checkRecovered(rec: WorkloadRecord, state: WalState, context: string): Promise<void> {
  const firstUnacked = rec.saves.findIndex((s) => !s.acked);
  if (firstUnacked >= 0) {
    const laterAcked = rec.saves.slice(firstUnacked).some((s) => s.acked);
    expect(laterAcked, `${context}: a later save was acknowledged before an earlier one`).toBe(false);
  }
  const ackedOps = firstUnacked < 0 ? rec.ops.length : (rec.saves[firstUnacked - 1]?.opsEnd ?? 0);
  const m: ModelState = { hs: { term: 0, vote: 0n, commit: 0 }, snap: { index: 0, term: 0, confState: { voters: [], learners: [] } }, log: new Map() };
  const got = signature({ hs: state.hardState, snap: state.snapshot, entries: state.entries });
  const allowed: string[] = [];
  for (let k = 0; k <= rec.ops.length; k++) {
    if (k > 0) applyOp(m, rec.ops[k - 1]!);
    if (k < ackedOps) continue;
    const sig = modelSignature(m);
    if (sig === got) {
      await checkSnapshotData(rec.ops.slice(0, k), state, context);
      return;
    }
    allowed.push(sig);
  }
  expect.fail(`${context}: recovered state is not an allowed prefix (${ackedOps} ops acknowledged)\n got ${got}\n allowed:\n  ${allowed.join('\n  ')}`);
}

async function checkSnapshotData(ops: LogicalOp[], state: WalState, context: string): Promise<void> {
  const snaps = ops.filter((o): o is Extract<LogicalOp, { kind: 'snap' }> => o.kind === 'snap');
  const latest = snaps[snaps.length - 1];
  const loaded = await state.loadSnapshot();
  if (!latest) {
    expect(loaded, `${context}: a snapshot appeared from nowhere`).toBeUndefined();
    return;
  }
  expect(loaded, `${context}: snapshot file for ${latest.meta.index} missing`).toBeDefined();
  expect(loaded!.meta.index).toBe(latest.meta.index);
  expect(Buffer.from(loaded!.data).equals(Buffer.from(latest.data!)), `${context}: snapshot data differs`).toBe(true);
}
