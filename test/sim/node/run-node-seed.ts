/**
 * One seed of the production node under the simulator (test/GLOSSARY.md R, W6/W8, C1/C4/C6/C7/C14, L1/L4/L5, L11):
 * 1–5 members, three clients and two watchers, and a chaos phase of chaosMs with faults chosen by the seed —
 * member crashes (one, or all at once: a power cut) and restarts, isolation and one-way cuts, lossy,
 * duplicating and slow links, slow disks — then a liveness phase: everything healed and restarted, and within
 * livenessMs a leader must exist, a write must succeed, every watcher must have delivered through the final
 * revision and every member must hold the same key space (HashKV). The recorded history then goes through
 * the chaos checkers (linearizability per key, revision order, watch guarantees). A fatal error in a member
 * (an assertion, a WAL failure) fails the seed too.
 */
import { Prng } from '../../../src/base/prng.js';
import { backendBacklogBytesMax } from '../../../src/base/limits.js';
import type { TestFault } from '../../../src/config/test-faults.js';
import { checkHistory } from '../../chaos/check.js';
import { describeOp } from '../../chaos/check-l1.js';
import { ServerCluster } from './server-cluster.js';
import type { NodeTuning } from './server-node.js';
import { Workload } from './workload.js';
import { replaceMember } from './replace-member.js';
import type { ServerNode } from './server-node.js';
import { WitnessNode } from './witness-node.js';
import { SimAuth } from './sim-auth.js';
import { Coordination } from './coordination.js';
import { checkElections, checkLocks, KeyLifetimes } from './coordination-check.js';
import { checkWitnesses } from './witness-check.js';

export const chaosMs = 20_000;
export const livenessMs = 30_000;
const membersMax = 5;

export interface NodeSeedOptions {
  seed: number;
  /** Members (1–5); random when absent. */
  nodes?: number;
  faults?: Set<TestFault>;
  /**
   * WAL damage seeds (3–5 members): one crash damages a complete record of the member's WAL (wal-damage.ts);
   * its restart must be refused, and the operator replaces it (replace-member.ts).
   */
  walDamage?: boolean;
  /** Lock/Election clients beside the workload (coordination.ts), judged by coordination-check.ts. */
  coordination?: boolean;
  /** Auth on: users, roles, tokens for every client, intruders getting etcd's errors (sim-auth.ts). */
  auth?: boolean;
  /**
   * Witness seeds: 2 data members and a witness (even seeds) or 4 and a witness (odd ones), built by the
   * production witness factory (witness-node.ts); in the liveness phase one data member stays crashed, and
   * the witness's own checks run (witness-check.ts).
   */
  witness?: boolean;
  trace?: (line: string) => void;
}

export interface NodeSeedResult {
  seed: number;
  ok: boolean;
  phase: 'chaos' | 'liveness' | 'check';
  error?: string;
  stats: { nodes: number; ops: number; acked: number; events: number; crashes: number; snapshots: number; applyHolds: number; lostBatches: number; livenessMs: number; simEvents: number; walRefusals: number; replaced: number; locks: number; wins: number; authErrors: number; witnessStarts: number };
  trace: string[];
}

/**
 * The WAL damage of a damage seed: its own stream (the seed's other draws stay as they were), and at most one
 * damaged member per seed, so the members left always hold a quorum of the configuration.
 */
interface DamagePlan {
  rng: Prng;
}

/** Whether this crash damages the member's WAL: half the crashes, while no member was damaged yet. */
function damageNow(c: ServerCluster, damage: DamagePlan | undefined): DamagePlan | undefined {
  if (damage === undefined || c.nodes.some((n) => n.walDamage !== undefined) || c.nodes.length < 3) return undefined;
  if (c.walRefusals > 0 || c.nodes.some((n) => n.member.isLearner)) return undefined;
  return damage.rng.int(2) === 0 ? damage : undefined;
}

function crashMaybeDamaged(c: ServerCluster, n: ServerNode | WitnessNode, damage: DamagePlan | undefined): void {
  const d = n instanceof WitnessNode ? undefined : damageNow(c, damage);
  if (d === undefined || n instanceof WitnessNode) c.crash(n);
  else c.crashDamaged(n, d.rng.int(2) === 0 ? 'bitflip' : 'zero-sector', d.rng);
}

/** One fault of the chaos phase, and how long it lasts. */
function injectFault(c: ServerCluster, rng: Prng, allowPowerCut: boolean, damage?: DamagePlan): void {
  const x = rng.next();
  // The witnesses too (none outside witness seeds, so the other seeds draw as before).
  const nodes = c.members.slice();
  const pick = nodes[rng.int(nodes.length)]!;
  const ms = 300 + rng.int(3000);
  if (x < 0.3) {
    crashMaybeDamaged(c, pick, damage);
    c.loop.at(ms, () => c.restart(pick));
  } else if (x < 0.36 && allowPowerCut) {
    c.trace('POWER CUT (every member)');
    crashMaybeDamaged(c, pick, damage);
    for (const n of nodes) c.crash(n);
    c.loop.at(ms, () => nodes.forEach((n) => c.restart(n)));
  } else if (x < 0.55 && nodes.length > 1) {
    c.trace(`isolate n${pick.id} for ${ms} ms`);
    c.isolate(pick.id);
    c.loop.at(ms, () => c.heal());
  } else if (x < 0.65 && nodes.length > 1) {
    const other = nodes[rng.int(nodes.length)]!;
    if (other !== pick) {
      c.trace(`cut n${pick.id} → n${other.id}`);
      c.cut(pick.id, other.id);
    }
  } else if (x < 0.85) {
    c.link = { dropRate: rng.int(25) / 100, duplicateRate: rng.int(6) / 100, delayMinMs: 1, delayMaxMs: 2 + rng.int(60) };
    c.trace(`link ${JSON.stringify(c.link)}`);
  } else {
    c.disk = { syncMinMs: 1, syncMaxMs: 2 + rng.int(20), slowRate: rng.int(30) / 100, slowMinMs: 200, slowMaxMs: 300 + rng.int(2500) };
    c.trace(`disk ${JSON.stringify(c.disk)}`);
  }
}

/**
 * The commit-delay window of the seed's logs: the ssd profile's none, emmc's 1 ms or sd's 4 ms. Taken from the
 * seed, not drawn from its generator, so the seeds found before it was added keep their trajectories.
 */
function walCommitDelayMsOf(seed: number): number {
  return [0, 0, 1, 4][(seed >>> 2) % 4]!;
}

/**
 * The backend backlog past which apply waits: the production default, or, on a third of the seeds, 256 bytes,
 * which one put exceeds, so apply holds on most batches (and on the log's fsync, when what is
 * applied runs ahead of it). Taken from the seed, as walCommitDelayMsOf.
 */
function backendBacklogBytesMaxOf(seed: number): number {
  return (seed >>> 4) % 3 === 0 ? 256 : backendBacklogBytesMax;
}

export function tuningOf(rng: Prng, faults: Set<TestFault>, seed = 0): NodeTuning {
  return {
    walCommitDelayMs: walCommitDelayMsOf(seed),
    // Half the seeds zero-fill and recycle segments as production does; taken from the seed, as above.
    walPreallocate: ((seed >>> 3) & 1) === 0,
    backendBacklogBytesMax: backendBacklogBytesMaxOf(seed),
    heartbeatMs: 100,
    electionMs: 1000,
    snapshotCount: [8, 25, 10_000][rng.int(3)]!,
    preVote: rng.int(5) !== 0,
    maxMsgBytes: [1024, 1024 * 1024][rng.int(2)]!,
    maxInflightMsgs: [4, 256][rng.int(2)]!,
    faults,
  };
}

export async function runNodeSeed(o: NodeSeedOptions): Promise<NodeSeedResult> {
  const rng = new Prng(o.seed ^ 0x5eed_0de);
  const voters = o.witness === true ? (o.seed % 2 === 0 ? 2 : 4) : o.nodes ?? (o.walDamage === true ? 3 + rng.int(membersMax - 2) : 1 + rng.int(membersMax));
  const tuning = { ...tuningOf(rng, o.faults ?? new Set(), o.seed), ...(o.auth === true ? { auth: true } : {}) };
  const c = new ServerCluster({ seed: rng.fork().int(2 ** 31), voters, ...(o.witness === true ? { witnesses: 1 } : {}), tuning, ...(o.trace !== undefined ? { trace: o.trace } : {}) });
  const auth = o.auth === true ? new SimAuth(c, o.seed) : undefined;
  const w = new Workload(c, rng.fork(), auth);
  const extras: Extras = {
    ...(o.walDamage === true ? { damage: { rng: new Prng(o.seed ^ 0xda3a_6e5) } } : {}),
    ...(auth !== undefined ? { auth } : {}),
    ...(o.coordination === true ? { coordination: new Coordination(c, new Prng(o.seed ^ 0xc00_4d), auth) } : {}),
    ...(o.witness === true ? { witness: true } : {}),
  };
  const stats: NodeSeedResult['stats'] = {
    nodes: voters, ops: 0, acked: 0, events: 0, crashes: 0, snapshots: 0, applyHolds: 0, lostBatches: 0, livenessMs: 0, simEvents: 0,
    walRefusals: 0, replaced: 0, locks: 0, wins: 0, authErrors: 0, witnessStarts: 0,
  };
  const result = (phase: NodeSeedResult['phase'], error?: string): NodeSeedResult => {
    const ops = w.recorder.ops;
    stats.ops = ops.length;
    stats.acked = ops.filter((op) => op.ret !== undefined).length;
    stats.events = w.recorder.watches.reduce((n, s) => n + s.responses.reduce((m, r) => m + r.events.length, 0), 0);
    stats.crashes = c.crashes;
    stats.snapshots = c.snapshotsSent;
    stats.applyHolds = c.applyHolds;
    stats.lostBatches = c.nodes.reduce((n, node) => n + node.disk.backend.lostBatches, 0);
    stats.simEvents = c.loop.events;
    stats.walRefusals = c.walRefusals;
    stats.witnessStarts = c.witnesses.reduce((n, wn) => n + wn.incarnation, 0);
    stats.locks = extras.coordination?.counts.locks ?? 0;
    stats.wins = extras.coordination?.counts.wins ?? 0;
    stats.authErrors = [...(auth?.seen.values() ?? [])].reduce((a, b) => a + b, 0);
    return { seed: o.seed, ok: error === undefined, phase, ...(error !== undefined ? { error } : {}), stats, trace: c.traceLines };
  };
  // An exception out of a callback or an unhandled rejection would stop a real member: fatal for the seed.
  const onRejection = (error: unknown): void => void c.fatal.push(`unhandled rejection: ${describeError(error)}`);
  process.on('unhandledRejection', onRejection);
  try {
    return await run(c, w, rng, stats, result, extras);
  } finally {
    process.off('unhandledRejection', onRejection);
  }
}

function describeError(error: unknown): string {
  return error instanceof Error ? `${error.name}: ${error.message}` : String(error);
}

type Finish = (phase: NodeSeedResult['phase'], error?: string) => NodeSeedResult;

/** What a seed runs beside the plain workload. */
interface Extras {
  damage?: DamagePlan;
  auth?: SimAuth;
  coordination?: Coordination;
  /** A witness seed: one data member stays crashed through the liveness phase; the witness checks run. */
  witness?: boolean;
}

/** Auth set up first (no chaos yet), then the workload, the Lock/Election clients and the intruders. */
async function startActors(c: ServerCluster, w: Workload, x: Extras): Promise<string | undefined> {
  if (x.auth !== undefined) {
    let ready = false;
    void x.auth.setup().then(() => (ready = true));
    await c.loop.runUntil(c.loop.nowMs + 10_000, () => ready || c.fatal.length > 0);
    if (!ready) return c.fatal[0] ?? 'auth setup did not finish within 10 s';
    x.auth.startIntruders(() => w.pick());
  }
  w.start(3, 2);
  x.coordination?.start(4, 2, 1);
  return undefined;
}

/** Clients, Lock/Election clients and intruders finish their calls and stop. */
function stopActors(w: Workload, x: Extras): Promise<unknown> {
  return Promise.all([w.stopClients(), x.coordination?.stop(), x.auth?.stop()]);
}

/** The checks of the extras: Lock/Election (coordination-check.ts) and auth (sim-auth.ts). */
function extraViolations(w: Workload, x: Extras): string[] {
  const out: string[] = [];
  if (x.coordination !== undefined) {
    const keys = new KeyLifetimes(w.recorder.watches);
    out.push(...checkLocks(x.coordination.holds, keys), ...checkElections(x.coordination.wins, x.coordination.seen, keys));
  }
  if (x.auth !== undefined) {
    out.push(...x.auth.violations);
    for (const s of w.recorder.watches) {
      for (const r of s.responses) {
        for (const e of r.events) if (x.auth.refusedValues.has(e.kv.value)) out.push(`auth: the refused write of ${e.kv.value} to ${e.kv.key} is in the key space at revision ${e.kv.modRev}`);
      }
    }
  }
  return out;
}

async function run(c: ServerCluster, w: Workload, rng: Prng, stats: NodeSeedResult['stats'], result: Finish, x: Extras): Promise<NodeSeedResult> {
  const damage = x.damage;
  const fatal = (): boolean => {
    if (c.loop.thrown !== undefined && c.fatal.length === 0) c.fatal.push(`thrown: ${describeError(c.loop.thrown)}`);
    return c.fatal.length > 0;
  };
  // A member lost for good (a refused start on a damaged WAL) is replaced by the operator.
  let replacing = 0;
  c.onLost = (lost) => {
    replacing++;
    void replaceMember(c, lost, c.nodes.length + 1 + stats.replaced + replacing).then(() => {
      replacing--;
      stats.replaced++;
    });
  };
  const operatorDone = (): boolean => replacing === 0 && c.nodes.every((n) => n.walDamage === undefined);
  for (const n of c.members) c.start(n);
  const notStarted = await startActors(c, w, x);
  if (notStarted !== undefined) return result('chaos', notStarted);
  // Chaos: a fault every 0.3–2.3 s (the first after the cluster had a moment to elect).
  const allowPowerCut = rng.int(3) === 0;
  for (let t = 2000 + rng.int(1000); t < chaosMs; t += 300 + rng.int(2000)) c.loop.at(t - c.loop.nowMs, () => injectFault(c, rng, allowPowerCut, damage));
  await c.loop.runUntil(chaosMs, fatal);
  if (fatal()) return result('chaos', c.fatal[0]);

  // Liveness: heal, restart, and require progress within the bound.
  c.trace('HEAL');
  c.heal();
  if (x.witness === true) {
    // The witness's case: one data member down (by the seed), the rest and the witness must keep going.
    const down = c.nodes[rng.int(c.nodes.length)]!;
    c.trace(`n${down.id} kept down through the liveness phase`);
    c.crash(down);
    c.keptDown.add(down);
  }
  for (const n of c.members) c.restart(n);
  const healedAt = c.loop.nowMs;
  const stopping = stopActors(w, x);
  let done = false;
  void stopping.then(() => (done = true));
  const deadline = healedAt + livenessMs;
  await c.loop.runUntil(deadline, () => (done && operatorDone()) || fatal());
  if (fatal()) return result('liveness', c.fatal[0]);
  if (!done) return result('liveness', `liveness: clients did not finish within ${livenessMs} ms of the heal`);
  if (!operatorDone()) return result('liveness', `liveness: the lost member was not replaced within ${livenessMs} ms of the heal`);
  const final = await finalRevision(c, w, deadline);
  if (fatal()) return result('liveness', c.fatal[0]);
  if (typeof final === 'string') return result('liveness', final);
  stats.livenessMs = c.loop.nowMs - healedAt;
  const closing = w.stopWatchers();
  let closed = false;
  void closing.then(() => (closed = true));
  await c.loop.runUntil(c.loop.nowMs + 1000, () => closed);

  const report = checkHistory(w.recorder.history(), { finalRev: final.revision });
  const violations = [...report.violations, ...extraViolations(w, x), ...(x.witness === true ? checkWitnesses(c, final.commit) : [])];
  if (violations.length > 0) {
    const first = violations[0]!;
    const related = w.recorder.ops.filter((op) => first.includes(`#${op.id} `)).map(describeOp);
    return result('check', `${violations.length} violation(s): ${first}${related.length > 0 ? ` (${related.join('; ')})` : ''}`);
  }
  return result('check');
}

/**
 * After the heal: a write through the leader succeeds, every watcher delivers through its revision, and
 * every member applies to the same revision with the same HashKV. Returns the final revision, or what failed.
 */
async function finalRevision(c: ServerCluster, w: Workload, deadlineMs: number): Promise<{ revision: number; commit: number } | string> {
  let revision: number | undefined;
  let commit = 0;
  let error = '';
  const attempt = async (): Promise<void> => {
    for (;;) {
      const leader = c.leader();
      if (leader !== undefined) {
        try {
          revision = (await leader.server!.linearizableBarrier({ requireLeader: true, signal: new AbortController().signal }), leader.server!.state.store.revision);
          commit = leader.driver?.status().commit ?? 0;
          return;
        } catch (e) {
          error = String(e);
        }
      }
      await c.loop.sleep(100);
    }
  };
  void attempt();
  await c.loop.runUntil(deadlineMs, () => revision !== undefined);
  if (revision === undefined) return `liveness: no leader served a linearizable read within the bound (${error})`;
  const rev = revision;
  // The data members serving (one a witness seed keeps down holds an older key space: not judged).
  const data = c.nodes.filter((n) => !c.keptDown.has(n));
  const converged = (): boolean =>
    w.watchersCaughtUp(rev) && data.every((n) => n.server !== undefined && n.server.state.store.revision >= rev);
  for (let t = c.loop.nowMs; t < deadlineMs && !converged(); t += 100) await c.loop.runUntil(t + 100);
  if (!w.watchersCaughtUp(rev)) return `liveness: watchers did not deliver through revision ${rev}`;
  if (!converged()) return `liveness: not every member reached revision ${rev}`;
  const hashes = await Promise.all(data.map((n) => n.server!.state.store.hashKV(rev)));
  const distinct = new Set(hashes.map((h) => h.hash));
  if (distinct.size > 1) return `members disagree at revision ${rev}: HashKV ${hashes.map((h, i) => `n${data[i]!.id}=${h.hash}`).join(' ')}`;
  return { revision: rev, commit };
}
