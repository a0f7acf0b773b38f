/**
 * The deterministic whole-cluster simulator: `npm run sim -- --seeds N --start S [--nodes k] [--verbose]`.
 *
 * MODEL. Each seed builds a cluster of 1–7 voters (RawNodes in one process) on one Prng (forked per
 * component) and a manual clock counted in steps (10 steps = 1 tick; each node ticks at its own phase). Each
 * node is driven as the server drives it (test/sim/sim-node.ts): ready() until empty; `messages` sent at
 * once; hardState/snapshot/entries queued on a simulated disk; `messagesAfterPersist` and onPersisted only when
 * the disk reports that write durable; committedEntries applied to a KV state machine (conf changes through
 * applyConfChange; compact() every K applied entries). The network drops (0–30%), duplicates, delays with
 * jitter (reordering), cuts links one way or both, isolates nodes and heals; messages to crashed nodes vanish.
 * The disk syncs in FIFO order with a latency distribution including slow syncs of 1–3 election timeouts; a
 * crash loses every un-synced write; a restart builds a new RawNode from the durable hard state, snapshot and
 * entries, and restores the state machine from the durable snapshot. Chaos (test/sim/chaos.ts) also freezes
 * nodes (their clock jumps on thaw), changes membership (add learner → promote, remove incl. the leader),
 * transfers leadership (to members, learners, itself, non-members) and issues ReadIndex requests.
 *
 * INVARIANTS, checked as every event happens (test/sim/checker.ts): election safety (historical), log matching,
 * leader append-only, leader completeness, commits only onto current-term entries (figure 8), state-machine
 * safety (chain hash per applied index: applied sequences are prefixes of one another), commit ≤ last index,
 * applied ≤ commit, no truncation at or below commit, durable commit never decreases, no vote grant or append
 * ack sent before it is durable, committed entries applied only once durable locally (in the seeds without
 * applyUnstable; with it, 3 seeds in 4, the write-behind backend is never written beyond the durable log, and
 * a restart from it replays exactly the rest), learners never vote or
 * campaign, ReadIndex answers linearizable (index ≥ everything applied anywhere before the read was issued).
 *
 * LIVENESS. After the chaos phase everything is healed (no drops or duplicates; delays stay under half a tick)
 * and every crashed member restarted (in a third of the seeds one voter is left down when that keeps a
 * majority of the final configuration). Then a leader must exist and every proposal ever made must be applied
 * on every live member of the leader's configuration (so no acknowledged proposal is lost) within a bound:
 * 20 election timeouts (200 ticks) with PreVote, 60 (600 ticks) without. Clients retry what they have not seen
 * applied every 3 election timeouts (deduplicated by id). Without PreVote, candidates with stale logs keep
 * raising the term and resetting every timer, and each round an up-to-date node wins the race only about half
 * the time, hence the longer bound. Measured over 20,000 seeds: with PreVote p99 52 ticks, max 80; without,
 * p99 100, max 165.
 *
 * THE PRODUCTION NODE. Besides the N core seeds, a run has --node-seeds K seeds of the production member
 * (test/sim/node/run-node-seed.ts: RaftDriver + EtcdServer + Wal on the simulated file system + KvStore on the
 * memory backend, an in-memory network; crashes incl. power cuts, partitions, lossy/slow links, slow disks;
 * clients and watchers through the EtcdApi, their history checked for linearizability and the watch
 * guarantees). K defaults to N / 10 (rounded down): a production seed costs about ten core seeds, so
 * `--seeds 1000` runs 1,000 core seeds and 100 production ones, numbered from S (measured on the shared 2-core
 * machine: 11.2 s and 10.8 s idle, 36.5 s and 36.1 s under load; 24–75 s in all).
 *
 * WITNESSES. --witness-seeds W (default N / 20) seeds of the core scenarios on two data voters and a witness
 * (even seeds) or four and a witness (odd seeds), src/raft/witness.ts: the same chaos and checkers, plus the
 * witness's own (it never applies, restores state, answers a read, sends a snapshot or appends as leader; at
 * the end its log holds no more than the data voters may still need). Chaos removes witnesses and adds new
 * ones; a data voter is left down for the liveness phase only when every other data voter runs.
 *
 * WITNESSES IN THE PRODUCTION NODE. --node-witness-seeds V (default K / 5, taken out of the K node seeds, so
 * the seed count stays) production-node seeds with a witness built by the production witness factory
 * (src/main/witness-factory.ts, test/sim/node/witness-node.ts): 2 data members and a witness on even seeds, 4
 * and a witness on odd ones; chaos crashes, isolates and cuts the witness too; in the liveness phase one data
 * member stays crashed. The workload, liveness and HashKV checks judge the data members only; the witness's
 * own (witness-check.ts): never handed snapshot data, follows the leader's term, its log reaches the commit.
 *
 * RESTORE THEN JOIN. --restore-seeds R (default N / 50) seeds of test/sim/node/run-restore-seed.ts: a member
 * rebuilt by the production restore from a backup of another cluster's member, two members joining it under
 * seeded faults, then the restored member lost for good (O1 in test/GLOSSARY.md, issue 25).
 *
 * WAL DAMAGE. --damage-seeds D (default N / 40) production-node seeds of 3–5 members in which one crash also
 * damages a complete record of the member's WAL (test/sim/node/wal-damage.ts: bits flipped in a record's
 * CRC-covered bytes, half the time in the log's last batch, or a zeroed sector with a later batch after it;
 * synced or not, never the torn tail). Its restart must be refused with the WAL's WalCorruptError calling it
 * damage, not a torn write, with its files untouched (issue 25, item 2; W5 and O3 in test/GLOSSARY.md); the operator then
 * removes it and adds a fresh member through MemberAdd/MemberPromote (test/sim/node/replace-member.ts), and
 * every checker of the node seeds must still pass.
 *
 * LOCK, ELECTION AND AUTH. --lock-seeds L (default N / 50) production-node seeds whose clients also run etcd's
 * Lock and Election recipes (src/api/concurrency) on short session leases (test/sim/node/coordination.ts:
 * three contenders for one lock, one on another, two candidates and a Leader observer), judged against the
 * key space the watchers saw (coordination-check.ts: a Lock answer at revision R names the oldest live key of
 * the lock at R, no two holders' spans overlap; a Campaign winner is the oldest live candidate when its member
 * answers; a Leader answer names the oldest live candidate at its revision). On odd lock seeds auth is on
 * (sim-auth.ts): every client authenticates and sends its token (5 s TTL, so tokens expire), and intruders
 * (a wrong password, a forged token, no token, a read-only user writing, a token unused past its TTL) must get
 * etcd's codes and messages, and their writes must never appear.
 *
 * DISK FILLS. --fill-seeds F (default 0: vitest runs twenty, test/sim/node/fill-seeds.test.ts) seeds of
 * test/sim/node/run-fill-seed.ts: 1–3 members on simulated disks of 64 MiB (ENOSPC when full) with the
 * production disk watch; writers of 64 KiB values fill them; NOSPACE must rise before any ENOSPC reaches a WAL
 * or backend, no member may exit, no acked write be lost, and del + compact + defrag + disarm must let writes
 * resume (issue 32). --fill-faults adds seeded slow disks and lossy links: a lagging follower is sent snapshots
 * of the full store, admitted only when its disk has room to restore them (3·S above the reserve); one that
 * never has room stays behind with NOSPACE up, alive, until the recovery shrinks the leader's data.
 *
 * Output: one line per failing seed with the command replaying it, a line of totals per kind, then exactly
 * `N passed, M failed` over both kinds (exit status 1 if M > 0). Flags: --nodes k (initial voters), --verbose
 * (trace), --messages (trace every delivery), --known-bugs (scenarios and checks of open FINDINGS.md entries),
 * --fault <voteBeforePersist|commitEarlierTermByCount|learnersVote> (break the core on purpose),
 * --node-seeds K, --node-fault <skip-read-index|ack-before-persist|drop-watch-event> (break the server on
 * purpose: src/config/test-faults.ts), --damage-seeds D, --lock-seeds L, --node-witness-seeds V. SIM_TRACE_APPLY=1 with --verbose also traces the production members'
 * soft state, stable index, applied revisions, lease entries and lease RPCs.
 */
import type { RaftConfig } from '../../src/raft/types.js';
import { parseTestFaults, type TestFault } from '../../src/config/test-faults.js';
import { runNodeSeed, type NodeSeedOptions, type NodeSeedResult } from './node/run-node-seed.js';
import { runRestoreSeed } from './node/run-restore-seed.js';
import { fillDiskBytes, runFillSeed } from './node/run-fill-seed.js';
import { witnessTopology } from './cli-topology.js';
import { runSeed, type SeedResult } from './run-seed.js';

interface CliArgs {
  seeds: number;
  start: number;
  nodes?: number;
  verbose: boolean;
  messages: boolean;
  knownBugs: boolean;
  fault?: Fault;
  nodeSeeds?: number;
  nodeFault?: TestFault;
  restoreSeeds?: number;
  fillSeeds?: number;
  fillFaults?: boolean;
  witnessSeeds?: number;
  damageSeeds?: number;
  lockSeeds?: number;
  nodeWitnessSeeds?: number;
}

type Fault = keyof NonNullable<RaftConfig['unsafeTestFaults']>;
const faults: readonly Fault[] = ['voteBeforePersist', 'commitEarlierTermByCount', 'learnersVote', 'witnessNeverReleases'];

function parseArgs(argv: string[]): CliArgs {
  const args: CliArgs = { seeds: 100, start: 1, verbose: false, messages: false, knownBugs: false };
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i];
    const v = (): number => {
      const n = Number(argv[++i]);
      if (!Number.isSafeInteger(n)) throw new Error(`${a} needs an integer`);
      return n;
    };
    if (a === '--seeds') args.seeds = v();
    else if (a === '--start') args.start = v();
    else if (a === '--nodes') args.nodes = v();
    else if (a === '--verbose') args.verbose = true;
    else if (a === '--messages') args.messages = args.verbose = true;
    else if (a === '--known-bugs') args.knownBugs = true;
    else if (a === '--fault') args.fault = parseFault(argv[++i]);
    else if (a === '--node-seeds') args.nodeSeeds = v();
    else if (a === '--node-fault') args.nodeFault = parseNodeFault(argv[++i]);
    else if (a === '--restore-seeds') args.restoreSeeds = v();
    else if (a === '--fill-seeds') args.fillSeeds = v();
    else if (a === '--fill-faults') args.fillFaults = true;
    else if (a === '--witness-seeds') args.witnessSeeds = v();
    else if (a === '--damage-seeds') args.damageSeeds = v();
    else if (a === '--lock-seeds') args.lockSeeds = v();
    else if (a === '--node-witness-seeds') args.nodeWitnessSeeds = v();
    else throw new Error(`unknown argument ${a} (usage: --seeds N --start S [--nodes k] [--verbose] [--messages] [--known-bugs] [--fault name] [--node-seeds K] [--node-fault name] [--restore-seeds R] [--fill-seeds F] [--fill-faults] [--witness-seeds W] [--damage-seeds D] [--lock-seeds L] [--node-witness-seeds V])`);
  }
  if (args.nodes !== undefined && (args.nodes < 1 || args.nodes > 7)) throw new Error('--nodes must be 1..7');
  if ([args.seeds, args.nodeSeeds, args.witnessSeeds, args.restoreSeeds, args.fillSeeds, args.damageSeeds, args.lockSeeds, args.nodeWitnessSeeds].some((n) => (n ?? 0) < 0)) throw new Error('seed counts must be ≥ 0');
  return args;
}

function parseFault(name: string | undefined): Fault {
  const f = faults.find((x) => x === name);
  if (f === undefined) throw new Error(`--fault must be one of ${faults.join(', ')}`);
  return f;
}

function parseNodeFault(name: string | undefined): TestFault {
  const f = [...parseTestFaults(name)];
  if (f.length !== 1) throw new Error('--node-fault needs one of skip-read-index, ack-before-persist, drop-watch-event, skip-snapshot-bridge');
  return f[0]!;
}

/**
 * A kind of production-node seeds: the plain ones, those with WAL damage (`--damage-seeds`), or those with
 * Lock/Election clients and, on odd seeds, auth (`--lock-seeds`).
 */
interface NodeKind {
  label: string;
  /** The word of its failure lines. */
  name: 'node' | 'damage' | 'lock' | 'witness node';
  flag: '--node-seeds' | '--damage-seeds' | '--lock-seeds' | '--node-witness-seeds';
  options: (seed: number) => Partial<NodeSeedOptions>;
}

const plainKind: NodeKind = { label: 'production node', name: 'node', flag: '--node-seeds', options: () => ({}) };
const damageKind: NodeKind = { label: 'WAL damage', name: 'damage', flag: '--damage-seeds', options: () => ({ walDamage: true }) };
const witnessKind: NodeKind = {
  label: 'production node with a witness (2 data + 1 witness, 4 data + 1 witness)', name: 'witness node', flag: '--node-witness-seeds',
  options: () => ({ witness: true }),
};
const lockKind: NodeKind = {
  label: 'Lock/Election (auth on odd seeds)', name: 'lock', flag: '--lock-seeds',
  options: (seed) => ({ coordination: true, ...(seed % 2 === 1 ? { auth: true } : {}) }),
};

function replayNode(r: NodeSeedResult, args: CliArgs, kind: NodeKind): string {
  const extra = `${args.nodes !== undefined ? ` --nodes ${args.nodes}` : ''}${args.nodeFault !== undefined ? ` --node-fault ${args.nodeFault}` : ''}`;
  return `npm run sim -- --seeds 0 ${kind === plainKind ? '' : '--node-seeds 0 '}${kind.flag} 1 --start ${r.seed}${extra} --verbose`;
}

/** Production-node seeds of one kind: one line per failure, one of totals; returns [passed, failed]. */
async function runNodeSeeds(args: CliArgs, count: number, kind: NodeKind): Promise<[number, number]> {
  if (count === 0) return [0, 0];
  let passed = 0;
  let failed = 0;
  const totals = { ops: 0, acked: 0, events: 0, crashes: 0, snapshots: 0, applyHolds: 0, lostBatches: 0, walRefusals: 0, replaced: 0, locks: 0, wins: 0, authErrors: 0 };
  let livenessMsMax = 0;
  const t0 = performance.now();
  for (let s = args.start; s < args.start + count; s++) {
    const r = await runNodeSeed({
      seed: s,
      ...(args.nodes !== undefined ? { nodes: Math.min(args.nodes, 5) } : {}),
      ...(args.nodeFault !== undefined ? { faults: new Set([args.nodeFault]) } : {}),
      ...kind.options(s),
      ...(args.verbose ? { trace: (line: string) => console.log(line) } : {}),
    });
    if (r.ok) passed++;
    else {
      failed++;
      console.log(`${kind.name} seed ${r.seed} FAILED (${r.phase}, ${r.stats.nodes} members): ${r.error} — replay: ${replayNode(r, args, kind)}`);
    }
    livenessMsMax = Math.max(livenessMsMax, r.stats.livenessMs);
    for (const k of Object.keys(totals) as (keyof typeof totals)[]) totals[k] += r.stats[k];
  }
  const seconds = (performance.now() - t0) / 1000;
  const damage =
    (kind === damageKind ? `, ${totals.walRefusals} starts refused on a damaged WAL and ${totals.replaced} members replaced` : '') +
    (kind === lockKind ? `, ${totals.locks} locks held, ${totals.wins} elections won, ${totals.authErrors} auth errors judged` : '');
  console.log(
    `${kind.label}: ${count} seeds in ${seconds.toFixed(1)} s; ${totals.ops} client calls (${totals.acked} answered), ` +
      `${totals.events} watch events, ${totals.crashes} crashes (${totals.lostBatches} unsynced backend batches lost)${damage}, ${totals.snapshots} snapshots sent, ${totals.applyHolds} apply holds; liveness took ≤ ${livenessMsMax} ms`,
  );
  return [passed, failed];
}

/** The restore seeds (node/run-restore-seed.ts): one line per failure, one of totals; returns [passed, failed]. */
async function runRestoreSeeds(args: CliArgs, count: number): Promise<[number, number]> {
  if (count === 0) return [0, 0];
  let passed = 0;
  let failed = 0;
  const totals = { records: 0, writes: 0, snapshots: 0, crashes: 0 };
  const t0 = performance.now();
  for (let s = args.start; s < args.start + count; s++) {
    const r = await runRestoreSeed({ seed: s, ...(args.verbose ? { trace: (line: string) => console.log(line) } : {}) });
    if (r.ok) passed++;
    else {
      failed++;
      console.log(`restore seed ${r.seed} FAILED: ${r.error} — replay: npm run sim -- --seeds 0 --restore-seeds 1 --start ${r.seed} --verbose`);
    }
    for (const k of Object.keys(totals) as (keyof typeof totals)[]) totals[k] += r.stats[k];
  }
  const seconds = (performance.now() - t0) / 1000;
  console.log(
    `restore then join: ${count} seeds in ${seconds.toFixed(1)} s; ${totals.records} records restored, ${totals.writes} writes, ` +
      `${totals.snapshots} snapshots sent to joiners, ${totals.crashes} crashes`,
  );
  return [passed, failed];
}

/** The fill seeds (node/run-fill-seed.ts): one line per failure, one of totals; returns [passed, failed]. */
async function runFillSeeds(args: CliArgs, count: number): Promise<[number, number]> {
  if (count === 0) return [0, 0];
  let passed = 0;
  let failed = 0;
  const totals = { acked: 0, refused: 0, resumed: 0 };
  let usedAtAlarmMax = 0;
  const t0 = performance.now();
  for (let s = args.start; s < args.start + count; s++) {
    const r = await runFillSeed({ seed: s, ...(args.fillFaults === true ? { faults: true } : {}), ...(args.verbose ? { trace: (line: string) => console.log(line) } : {}) });
    if (r.ok) passed++;
    else {
      failed++;
      console.log(`fill seed ${r.seed} FAILED: ${r.error} — replay: npm run sim -- --seeds 0 --fill-seeds 1 --start ${r.seed}${args.fillFaults === true ? ' --fill-faults' : ''} --verbose`);
    }
    for (const k of Object.keys(totals) as (keyof typeof totals)[]) totals[k] += r.stats[k];
    usedAtAlarmMax = Math.max(usedAtAlarmMax, r.stats.usedAtAlarm);
  }
  const seconds = (performance.now() - t0) / 1000;
  console.log(
    `disk fills: ${count} seeds in ${seconds.toFixed(1)} s; ${totals.acked} large writes acked, ${totals.refused} refused with NOSPACE, ` +
      `${totals.resumed} after the recovery; at most ${(usedAtAlarmMax / 2 ** 20).toFixed(1)} of ${fillDiskBytes / 2 ** 20} MiB used when NOSPACE rose`,
  );
  return [passed, failed];
}

/**
 * The witness seeds: the core seeds' scenarios on two data voters and a witness (even seeds) or four and a
 * witness (odd seeds), with the same checkers plus the witness's own; returns [passed, failed].
 */
function runWitnessSeeds(args: CliArgs, count: number): [number, number] {
  if (count === 0) return [0, 0];
  let passed = 0;
  let failed = 0;
  let leaderships = 0;
  let entriesMax = 0;
  let livenessMax = 0;
  const t0 = performance.now();
  for (let s = args.start; s < args.start + count; s++) {
    const r = runSeed({
      seed: s,
      ...witnessTopology(s),
      ...(args.verbose ? { trace: (line: string) => console.log(line) } : {}),
      ...(args.messages ? { traceMessages: true } : {}),
      ...(args.fault !== undefined ? { faults: { [args.fault]: true } } : {}),
    });
    if (r.ok) passed++;
    else {
      failed++;
      const extra = args.fault !== undefined ? ` --fault ${args.fault}` : '';
      console.log(`witness seed ${r.seed} FAILED (${r.phase}, ${r.stats.nodes} voters): ${r.error} — replay: npm run sim -- --seeds 0 --witness-seeds 1 --start ${r.seed}${extra} --verbose`);
    }
    leaderships += r.stats.witnessLeaderships;
    entriesMax = Math.max(entriesMax, r.stats.witnessEntriesMax);
    livenessMax = Math.max(livenessMax, r.stats.livenessTicks);
  }
  const seconds = (performance.now() - t0) / 1000;
  console.log(
    `witness: ${count} seeds (2 data + 1 witness, 4 data + 1 witness) in ${seconds.toFixed(1)} s; ${leaderships} witness ` +
      `leaderships (each only to hand its log over); witness logs ≤ ${entriesMax} entries at the end; liveness took ≤ ${livenessMax} ticks`,
  );
  return [passed, failed];
}

function replay(r: SeedResult, args: CliArgs): string {
  const extra =
    `${args.nodes !== undefined ? ` --nodes ${args.nodes}` : ''}${args.knownBugs ? ' --known-bugs' : ''}` +
    `${args.fault !== undefined ? ` --fault ${args.fault}` : ''}`;
  return `npm run sim -- --seeds 1 --start ${r.seed}${extra} --verbose`;
}

async function main(): Promise<void> {
  const args = parseArgs(process.argv.slice(2));
  let passed = 0;
  let failed = 0;
  let livenessMax = 0;
  const totals = { leaders: 0, acked: 0, readsChecked: 0, crashes: 0, snapshotsInstalled: 0, confChanges: 0 };
  const t0 = performance.now();
  for (let s = args.start; s < args.start + args.seeds; s++) {
    const r = runSeed({
      seed: s,
      ...(args.nodes !== undefined ? { nodes: args.nodes } : {}),
      ...(args.verbose ? { trace: (line: string) => console.log(line) } : {}),
      ...(args.messages ? { traceMessages: true } : {}),
      ...(args.knownBugs ? { knownBugs: true } : {}),
      ...(args.fault !== undefined ? { faults: { [args.fault]: true } } : {}),
    });
    if (r.ok) passed++;
    else {
      failed++;
      console.log(`seed ${r.seed} FAILED (${r.phase}, ${r.stats.nodes} nodes): ${r.error} — replay: ${replay(r, args)}`);
      if (args.verbose) console.log(r.trace.slice(-1).join('\n'));
    }
    livenessMax = Math.max(livenessMax, r.stats.livenessTicks);
    for (const k of Object.keys(totals) as (keyof typeof totals)[]) totals[k] += r.stats[k];
  }
  const seconds = (performance.now() - t0) / 1000;
  if (args.seeds > 0) console.log(
    `${seconds.toFixed(1)} s; ${totals.leaders} leaders elected, ${totals.acked} proposals acked, ` +
      `${totals.readsChecked} reads checked, ${totals.crashes} crashes, ${totals.snapshotsInstalled} snapshots ` +
      `installed, ${totals.confChanges} membership changes; liveness took ≤ ${livenessMax} ticks`,
  );
  const [witnessPassed, witnessFailed] = runWitnessSeeds(args, args.witnessSeeds ?? Math.floor(args.seeds / 20));
  passed += witnessPassed;
  failed += witnessFailed;
  // The witness node seeds are a share of the node seeds: the run's seed count (and time) stays as it was.
  const nodeSeeds = args.nodeSeeds ?? Math.floor(args.seeds / 10);
  const nodeWitnessSeeds = args.nodeWitnessSeeds ?? Math.floor(nodeSeeds / 5);
  const kinds: [NodeKind, number][] = [
    [plainKind, Math.max(0, nodeSeeds - nodeWitnessSeeds)],
    [witnessKind, nodeWitnessSeeds],
    [damageKind, args.damageSeeds ?? Math.floor(args.seeds / 40)],
    [lockKind, args.lockSeeds ?? Math.floor(args.seeds / 50)],
  ];
  for (const [kind, count] of kinds) {
    const [p, f] = await runNodeSeeds(args, count, kind);
    passed += p;
    failed += f;
  }
  const [restorePassed, restoreFailed] = await runRestoreSeeds(args, args.restoreSeeds ?? Math.floor(args.seeds / 50));
  passed += restorePassed;
  failed += restoreFailed;
  const [fillPassed, fillFailed] = await runFillSeeds(args, args.fillSeeds ?? 0);
  passed += fillPassed;
  failed += fillFailed;
  console.log(`${passed} passed, ${failed} failed`);
  process.exitCode = failed > 0 ? 1 : 0;
}

await main();
