/**
 * One seed, both modes: the chaos phase (safety checked after every step) and then the liveness phase: heal
 * everything (network, disks, frozen nodes), restart every crashed member (sometimes leaving one voter down when
 * that cannot cost the final configuration its majority), and require within livenessBoundTicks (20 election
 * timeouts with PreVote, 60 without) that a leader exists and every proposal ever made (clients retry until they
 * see it applied) is applied on every live member of the leader's configuration.
 */
import { Prng } from '../../src/base/prng.js';
import { EntryType } from '../../src/raft/types.js';
import type { RaftConfig } from '../../src/raft/types.js';
import { Chaos, clusterSizeMax, planChaos } from './chaos.js';
import type { CheckOptions } from './checker.js';
import { Cluster, type RaftTuning } from './cluster.js';
import { describeCluster } from './describe.js';

export const livenessElectionTimeouts = 20;
/**
 * Without PreVote, candidates whose logs are stale keep raising the term and resetting everyone's timer; each
 * round an up-to-date node times out first with probability about one half, so the tail is long.
 */
export const livenessElectionTimeoutsNoPreVote = 60;

export function livenessBoundTicks(raft: Pick<RaftTuning, 'preVote' | 'electionTicks'>): number {
  return (raft.preVote ? livenessElectionTimeouts : livenessElectionTimeoutsNoPreVote) * raft.electionTicks;
}
/** A client re-proposes what it has not seen applied every this many election timeouts (a request timeout). */
export const clientRetryElectionTimeouts = 3;

export interface SeedOptions {
  seed: number;
  /** Initial voters (1–7); random when absent. */
  nodes?: number;
  /** How many of the initial voters are witnesses (the last ones; src/raft/witness.ts). */
  witnesses?: number;
  faults?: RaftConfig['unsafeTestFaults'];
  checks?: Partial<CheckOptions>;
  trace?: (line: string) => void;
  traceMessages?: boolean;
  /** Also generate the scenarios of open findings (test/sim/FINDINGS.md). */
  knownBugs?: boolean;
}

export interface SeedStats {
  nodes: number;
  witnesses: number;
  /** Times a witness became leader (each time only to hand its log over). */
  witnessLeaderships: number;
  /** The most log entries a witness held at the end of the run. */
  witnessEntriesMax: number;
  preVote: boolean;
  chaosTicks: number;
  livenessTicks: number;
  leaders: number;
  acked: number;
  readsChecked: number;
  committed: number;
  crashes: number;
  snapshotsInstalled: number;
  confChanges: number;
}

export interface SeedResult {
  seed: number;
  ok: boolean;
  phase: 'chaos' | 'liveness';
  error?: string;
  stats: SeedStats;
  trace: string[];
}

function tuningFor(rng: Prng, seed: number, faults: SeedOptions['faults']): Partial<RaftTuning> {
  const t: Partial<RaftTuning> = {
    electionTicks: 10,
    heartbeatTicks: 1 + rng.int(3),
    preVote: rng.int(5) !== 0,
    checkQuorum: rng.int(5) !== 0,
    maxMsgBytes: [16, 64, 1024, 64 * 1024][rng.int(4)]!,
    maxInflightMsgs: [1, 4, 64][rng.int(3)]!,
    maxUncommittedBytes: [512, 1024 * 1024][rng.int(2)]!,
  };
  // One entry per message and one message in flight catches up too slowly for the liveness bound.
  if (t.maxMsgBytes! < 1024 && t.maxInflightMsgs! < 64) t.maxInflightMsgs = 64;
  if (faults !== undefined) t.unsafeTestFaults = faults;
  // From the seed, not the generator, so every other choice of a seed stays as it was.
  t.applyUnstable = seed % 4 !== 0;
  return t;
}

export function runSeed(options: SeedOptions): SeedResult {
  const rng = new Prng(options.seed);
  const nodes = options.nodes ?? 1 + rng.int(clusterSizeMax);
  const raft = tuningFor(rng, options.seed, options.faults);
  const stepsPerTick = 10;
  const plan = planChaos(rng, raft.electionTicks!, stepsPerTick, options.knownBugs === true);
  const witnesses = options.witnesses ?? 0;
  if (witnesses >= nodes) throw new Error(`${witnesses} witnesses need more than ${nodes} voters`);
  const stats: SeedStats = { nodes, witnesses, witnessLeaderships: 0, witnessEntriesMax: 0, preVote: raft.preVote === true, chaosTicks: plan.chaosTicks, livenessTicks: 0, leaders: 0, acked: 0, readsChecked: 0, committed: 0, crashes: 0, snapshotsInstalled: 0, confChanges: 0 };
  let phase: SeedResult['phase'] = 'chaos';
  let cluster: Cluster | undefined;
  try {
    const compactEvery = [5, 10, 25, 1_000_000][rng.int(4)]!;
    cluster = new Cluster({
      seed: rng.fork().int(2 ** 31),
      voters: nodes,
      witnesses,
      raft,
      link: plan.link,
      disk: plan.disk,
      node: { compactEvery, keepEntries: rng.int(6) },
      stepsPerTick,
      ...(options.checks !== undefined ? { checks: options.checks } : {}),
      ...(options.trace !== undefined ? { trace: options.trace } : {}),
      ...(options.traceMessages === true ? { traceMessages: true } : {}),
    });
    const chaos = new Chaos(cluster, rng.fork(), plan);
    for (let t = 0; t < plan.chaosTicks; t++) chaos.tick();
    phase = 'liveness';
    stats.livenessTicks = runLiveness(cluster, chaos, rng.fork());
    stats.witnessEntriesMax = checkWitnessLogs(cluster);
    return { seed: options.seed, ok: true, phase, stats: fill(stats, cluster), trace: [] };
  } catch (err) {
    const error = err instanceof Error ? `${err.name}: ${err.message}` : String(err);
    const trace = cluster?.traceLines ?? [];
    if (cluster !== undefined) fill(stats, cluster);
    return { seed: options.seed, ok: false, phase, error, stats, trace: [...trace, ...(err instanceof Error && err.stack ? [err.stack] : [])] };
  }
}

function fill(stats: SeedStats, c: Cluster): SeedStats {
  stats.leaders = c.checker.leadersElected;
  stats.acked = c.acked.size;
  stats.readsChecked = c.checker.readsChecked;
  stats.committed = c.checker.committedIndex();
  stats.crashes = c.crashes;
  stats.snapshotsInstalled = [...c.nodes.values()].reduce((sum, n) => sum + n.snapshotsRestored, 0);
  stats.confChanges = c.confChangesApplied.size - stats.nodes; // minus the bootstrap entries
  stats.witnessLeaderships = c.checker.witnessLeaderships;
  return stats;
}

/** Returns the ticks the cluster needed to become live; throws if it did not within the bound. */
function runLiveness(c: Cluster, chaos: Chaos, rng: Prng): number {
  chaos.healEverything();
  const keepDown = rng.int(3) === 0 ? pickVoterToKeepDown(c, rng) : undefined;
  for (const id of c.ids()) {
    const n = c.node(id);
    if (id === keepDown) c.crash(id);
    else if (!n.up && !n.removed) c.restart(id);
  }
  if (keepDown !== undefined) c.trace(`liveness: keeping n${keepDown} down`);
  const boundTicks = livenessBoundTicks(c.raft);
  const took = c.runUntil(() => {
    chaos.retryPending(clientRetryElectionTimeouts * c.raft.electionTicks);
    return isLive(c, chaos);
  }, boundTicks);
  if (took === undefined) {
    const l = c.dataLeader();
    const why = l === undefined ? 'no leader' : `leader n${l.id} term ${l.hs.term}; pending ${chaos.pending.size}; ${lagging(c)}`;
    c.trace(describeCluster(c));
    throw new Error(`liveness: not live within ${boundTicks} ticks after healing (${why})`);
  }
  return took;
}

/** The up data members of the data leader's configuration (undefined while no data member leads). */
function liveMembers(c: Cluster): bigint[] | undefined {
  const l = c.dataLeader();
  if (l === undefined) return undefined;
  const cs = l.confState;
  return [...cs.voters, ...cs.learners].filter((id) => c.nodes.get(id)?.up === true && !c.node(id).witness);
}

function isLive(c: Cluster, chaos: Chaos): boolean {
  const live = liveMembers(c);
  if (live === undefined || chaos.pending.size > 0) return false;
  return live.every((id) => c.node(id).sm.ids.size === c.acked.size);
}

function lagging(c: Cluster): string {
  const live = liveMembers(c) ?? [];
  return live.map((id) => `n${id} applied ${c.node(id).sm.appliedIndex} ids ${c.node(id).sm.ids.size}/${c.acked.size}`).join(', ');
}

/** Ticks a live cluster gets for its witnesses to drop what every data voter holds (heartbeats carry it). */
export const witnessReleaseElectionTimeouts = 3;

/**
 * The witness log stays bounded: once live, within a few heartbeats every up witness of the data leader's
 * configuration holds no more entries than the leader's log has beyond the lowest match of a data voter (a
 * data voter left down keeps that match low, and the witness must keep what it lacks). Returns the most
 * entries a witness held.
 */
function checkWitnessLogs(c: Cluster): number {
  const excess = (): string[] => {
    const l = c.dataLeader();
    if (l === undefined) return ['no data leader'];
    const progress = l.raw!.status().progress!;
    const cs = l.confState;
    const dataVoters = cs.voters.filter((id) => !(cs.witnesses ?? []).includes(id));
    const matchMin = Math.min(...dataVoters.map((id) => progress.get(id)?.match ?? 0));
    const bound = Math.max(0, l.log.lastIndex() - matchMin);
    return (cs.witnesses ?? [])
      .filter((id) => c.nodes.get(id)?.up === true)
      .filter((id) => c.node(id).log.entries.length > bound)
      .map((id) => `witness n${id} holds ${c.node(id).log.entries.length} entries, bound ${bound}`);
  };
  const took = c.runUntil(() => excess().length === 0, witnessReleaseElectionTimeouts * c.raft.electionTicks);
  if (took === undefined) c.checker.fail(`witness log unbounded: ${excess().join('; ')}`);
  let held = 0;
  for (const n of c.nodes.values()) if (n.witness && n.up) held = Math.max(held, n.log.entries.length);
  return held;
}

/**
 * A voter we may leave down without costing the final configuration its majority: only when no conf change
 * is in flight (no conf entry in any log past the known commit), every running node has applied everything
 * known committed (so all agree on the configuration), and the configuration keeps a majority of voters that
 * will run (not removed, not the one left down).
 */
function pickVoterToKeepDown(c: Cluster, rng: Prng): bigint | undefined {
  const committed = c.checker.committedIndex();
  const running = [...c.nodes.values()].filter((n) => n.up && !n.removed);
  for (const n of c.nodes.values()) {
    for (let i = committed + 1; i <= n.log.lastIndex(); i++) if (n.log.entry(i)?.type === EntryType.ConfChange) return undefined;
  }
  if (running.length === 0 || running.some((n) => n.appliedIndex < committed)) return undefined;
  const cs = running[0]!.confState;
  const voters = cs.voters;
  const witnesses = cs.witnesses ?? [];
  // With a witness, a data voter may stay down only if every other data voter runs (and so holds every
  // committed entry): the witness may have dropped entries a data voter that was down needs.
  const dataRunning = (id: bigint): boolean => witnesses.includes(id) || running.some((n) => n.id === id);
  const candidates = voters.filter(
    (id) => c.nodes.get(id)?.removed === false && (witnesses.length === 0 || voters.every((v) => v === id || dataRunning(v))),
  );
  if (candidates.length - 1 < Math.floor(voters.length / 2) + 1) return undefined;
  return candidates[rng.int(candidates.length)];
}
