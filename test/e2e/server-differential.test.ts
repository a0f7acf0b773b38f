/**
 * The whole server, differential against etcd 3.4 (issue 35): seeded random sequences of client operations
 * (test/e2e/differential/gen.ts: KV and nested Txn, leases, watches across compaction and defragmentation,
 * maintenance, alarms, auth) sent to a real etcd and to a real etcetera process, over raw gRPC and over the
 * JSON gateway; every answer compared field by field once ids, terms and tokens are named (normalise.ts), errors
 * by code and message. Deliberate differences are in allow-list.ts.
 *
 * Replay: DIFF_SEED=<seed> (one sequence, or DIFF_SEQUENCES of them from that seed); longer runs:
 * DIFF_SEQUENCES=5000. Without /usr/bin/etcd the test skips with a message locally and fails under CI.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { killAll, startServer, type ServerProcess } from './harness.js';
import { haveEtcd, startRealEtcd, type RealEtcd } from './real-etcd.js';
import { allowed } from './differential/allow-list.js';
import { generate, type Sequence } from './differential/gen.js';
import { Side } from './differential/side.js';

const replay = process.env.DIFF_SEED !== undefined;
const firstSeed = replay ? Number(process.env.DIFF_SEED) : 1;
const sequences = Number(process.env.DIFF_SEQUENCES ?? (replay ? 1 : 300));

describe('the server against etcd 3.4, random sequences', () => {
  const withEtcd = haveEtcd();
  let etcd: RealEtcd | undefined;
  let ours: ServerProcess;
  let theirs: Side;
  let mine: Side;

  beforeAll(async () => {
    [ours, etcd] = await Promise.all([
      // Neither side waits on fsyncs: the test compares answers, not durability.
      startServer({ name: 'diff', args: ['--cluster-init', '--unsafe-no-fsync'] }),
      withEtcd ? startRealEtcd('diffref', { tmpfs: true }) : Promise.resolve(undefined),
    ]);
    if (etcd === undefined) return;
    theirs = new Side('etcd', Number(new URL(etcd.clientUrl).port));
    mine = new Side('etcetera', ours.clientPort);
    await Promise.all([theirs.init(), mine.init()]);
    // Equal starting revisions (etcd's probe and our start leave both at 1, but say so if not).
    expect(mine.revision).toBe(theirs.revision);
  }, 60_000);
  afterAll(async () => {
    theirs?.close();
    mine?.close();
    await etcd?.stop();
    await killAll();
  });

  it.skipIf(!withEtcd)(`answers ${sequences} sequences from seed ${firstSeed} as etcd 3.4 does`, async () => {
    const allowances = new Map<string, number>();
    for (let seed = firstSeed; seed < firstSeed + sequences; seed++) {
      const seq = generate(seed);
      await runSequence(seq, theirs, mine, allowances);
    }
    console.log([...opMs].sort((a, b) => b[1] - a[1]).slice(0, 14).map(([k, ms]) => `${k} ${ms} ms`).join(', '));
    console.log(`differential: ${sequences} sequences from seed ${firstSeed}; fragments: ${theirs.fragmentPieces} (etcd), ${mine.fragmentPieces} (ours); allowed: ${JSON.stringify(Object.fromEntries(allowances))}`);
  }, 600_000);
});

const opMs = new Map<string, number>();
async function runSequence(seq: Sequence, theirs: Side, mine: Side, allowances: Map<string, number>): Promise<void> {
  for (const [i, op] of seq.ops.entries()) {
    const t0 = Date.now();
    const timed = async (side: Side): Promise<unknown> => {
      const t = Date.now();
      const r = await side.run(op);
      const key = `${side.label}:${op.k === 'call' ? op.method : op.k}`;
      opMs.set(key, (opMs.get(key) ?? 0) + Date.now() - t);
      return r;
    };
    const [a, b] = await Promise.all([timed(theirs), timed(mine)]);
    if (Date.now() - t0 > 2000) console.log(`slow op (${Date.now() - t0} ms): seed ${seq.seed} op ${i} ${JSON.stringify(op).slice(0, 160)}`);
    const etcd = strip(a);
    const ours = strip(b);
    if (JSON.stringify(etcd) === JSON.stringify(ours)) continue;
    const allowance = allowed(op, etcd as Record<string, unknown>, ours as Record<string, unknown>);
    if (allowance !== undefined) {
      allowances.set(allowance.name, (allowances.get(allowance.name) ?? 0) + 1);
      continue;
    }
    const where = `sequence seed ${seq.seed} (${seq.kind}), op ${i} of ${seq.ops.length}; replay: DIFF_SEED=${seq.seed}`;
    expect({ where, op, ours }).toEqual({ where, op, ours: etcd });
  }
}

/** Drops the raw answer a side keeps for itself (ids, tokens) before the comparison. */
function strip(v: unknown): unknown {
  if (v === null || typeof v !== 'object' || Array.isArray(v)) return v;
  const { raw: _raw, ...rest } = v as Record<string, unknown>;
  return rest;
}
