/**
 * The random scenario generator. One seed fixes everything: cluster size (1–7 voters), Raft tuning, network
 * and disk profiles, and a chaos phase of a few hundred ticks during which, tick by tick, it proposes, reads,
 * crashes and restarts nodes, partitions (symmetric, one-way, isolating the leader), freezes nodes (clock
 * jump), slows disks, changes membership (add learner → promote, remove incl. the leader) and transfers
 * leadership (to members, learners, itself and non-members). Then the liveness phase (see runLiveness).
 */
import type { Prng } from '../../src/base/prng.js';
import { MessageType, type Message, type NodeId } from '../../src/raft/types.js';
import type { Cluster } from './cluster.js';
import type { DiskProfile } from './disk.js';
import type { LinkProfile } from './network.js';

/** Most nodes that may exist at once in a scenario. */
export const clusterSizeMax = 7;

export interface ChaosPlan {
  chaosTicks: number;
  link: LinkProfile;
  disk: DiskProfile;
  /** Per-tick probabilities of each kind of action. */
  rates: Record<ActionKind, number>;
  /** Crash the first node that grants a vote, right after it does (see Chaos#maybeCrashAfterVote). */
  crashAfterVote: boolean;
  /** Add a learner early (around tick 20), so learner rules are exercised in most seeds. */
  earlyLearner: boolean;
  /** Also generate the scenarios of open findings (test/sim/FINDINGS.md), which fail until the core is fixed. */
  knownBugs: boolean;
}

type ActionKind =
  | 'propose'
  | 'read'
  | 'crash'
  | 'restart'
  | 'partition'
  | 'oneWay'
  | 'isolateLeader'
  | 'heal'
  | 'freeze'
  | 'slowDisk'
  | 'confChange'
  | 'transfer'
  | 'isolateLearner'
  | 'lossyLink';

export function planChaos(rng: Prng, electionTicks: number, stepsPerTick: number, knownBugs = false): ChaosPlan {
  const calm = rng.int(4) === 0;
  const link: LinkProfile = {
    dropRate: rng.int(3) === 0 ? 0 : rng.next() * 0.3,
    dupRate: rng.int(2) === 0 ? 0 : rng.next() * 0.1,
    delaySteps: 1 + rng.int(5),
    jitterSteps: rng.int(3) * rng.int(2 * stepsPerTick),
  };
  const slowSteps = electionTicks * stepsPerTick;
  const disk: DiskProfile = {
    syncMinSteps: 1,
    syncMaxSteps: 1 + rng.int(8),
    slowRate: rng.int(2) === 0 ? 0 : rng.next() * 0.05,
    slowMinSteps: slowSteps,
    slowMaxSteps: 3 * slowSteps,
  };
  const f = calm ? 0.3 : 1;
  const rates: Record<ActionKind, number> = {
    propose: 0.3,
    read: 0.1,
    crash: 0.02 * f,
    restart: 0.06,
    partition: 0.015 * f,
    oneWay: 0.015 * f,
    isolateLeader: 0.01 * f,
    heal: 0.03,
    freeze: 0.008 * f,
    slowDisk: 0.01 * f,
    confChange: 0.02,
    transfer: 0.01,
    isolateLearner: 0.02 * f,
    lossyLink: 0.02 * f,
  };
  return { chaosTicks: 150 + rng.int(350), link, disk, rates, crashAfterVote: rng.int(2) === 0, earlyLearner: rng.int(2) === 0, knownBugs };
}

export class Chaos {
  readonly #c: Cluster;
  readonly #rng: Prng;
  readonly #plan: ChaosPlan;
  /** Proposals not yet seen applied anywhere; the client retries them. */
  readonly pending = new Map<number, number>();
  #nextNewId: number;
  #thawAt = new Map<NodeId, number>();
  #fastDiskAt = new Map<NodeId, number>();

  constructor(cluster: Cluster, rng: Prng, plan: ChaosPlan) {
    this.#c = cluster;
    this.#rng = rng;
    this.#plan = plan;
    this.#nextNewId = cluster.ids().length + 1;
    if (plan.crashAfterVote) cluster.onSend = (m) => this.#maybeCrashAfterVote(m);
  }

  /**
   * "Crash right after voting": the first vote grant of the scenario crashes its voter at once (in the same
   * step, before a normal disk sync completes) and cuts the candidate off; the voter restarts a tick later.
   * A core that lets the grant leave before the vote is durable then lets the voter vote again in that term
   * (or campaign in it), and two leaders of one term follow.
   */
  #maybeCrashAfterVote(m: Message): void {
    if (m.type !== MessageType.VoteResp || m.reject || this.#voteCrashDone) return;
    this.#voteCrashDone = true;
    const c = this.#c;
    c.at(c.nowStep, () => {
      c.trace(`CRASH AFTER VOTE: n${m.from} voted for n${m.to} in term ${m.term}`);
      c.crash(m.from);
      c.net.isolate(m.to, c.ids());
      c.at(c.nowStep + c.stepsPerTick, () => c.restart(m.from));
    });
  }

  #voteCrashDone = false;

  #pick<T>(xs: readonly T[]): T | undefined {
    return xs.length === 0 ? undefined : xs[this.#rng.int(xs.length)];
  }

  #upIds(): NodeId[] {
    return this.#c.ids().filter((id) => this.#c.node(id).up);
  }

  /** One tick of chaos: maybe act, then let the cluster run a tick. */
  tick(): void {
    const r = this.#plan.rates;
    const act = (k: ActionKind): boolean => this.#rng.next() < r[k];
    if (act('propose')) this.proposeNew();
    if (act('read')) this.read();
    if (act('crash')) this.#crash();
    if (act('restart')) this.#restart();
    if (act('partition')) this.#partition();
    if (act('oneWay')) this.#oneWay();
    if (act('isolateLeader')) this.#isolateLeader();
    if (act('heal')) this.#heal();
    if (act('freeze')) this.#freeze();
    if (act('slowDisk')) this.#slowDisk();
    if (act('confChange')) this.#confChange();
    if (act('transfer')) this.#transfer();
    if (act('isolateLearner')) this.#isolateLearner();
    if (act('lossyLink')) this.#lossyLink();
    if (this.#plan.earlyLearner && this.#c.nowTicks() === 20) this.#addLearner();
    this.#timers();
    this.retryPending(3 * this.#c.raft.electionTicks);
    this.#c.runTicks(1);
  }

  proposeNew(): void {
    const id = this.#pick(this.#upIds());
    if (id === undefined) return;
    const { proposalId } = this.#c.propose(id);
    this.pending.set(proposalId, this.#c.nowTicks());
  }

  /** A client retries a proposal it has not seen applied every `everyTicks`, on a random node or the leader. */
  retryPending(everyTicks: number): void {
    const now = this.#c.nowTicks();
    for (const [pid, at] of this.pending) {
      if (this.#c.acked.has(pid)) {
        this.pending.delete(pid);
        continue;
      }
      if (now - at < everyTicks) continue;
      const target = this.#c.dataLeader()?.id ?? this.#pick(this.#upIds());
      if (target === undefined) continue;
      this.#c.propose(target, pid);
      this.pending.set(pid, now);
    }
  }

  read(): void {
    const id = this.#pick(this.#upIds());
    if (id !== undefined) this.#c.readIndex(id);
  }

  #crash(): void {
    const id = this.#pick(this.#upIds());
    if (id !== undefined) this.#c.crash(id);
  }

  #restart(): void {
    const down = this.#c.ids().filter((id) => !this.#c.node(id).up && !this.#c.node(id).removed);
    const id = this.#pick(down);
    if (id !== undefined) this.#c.restart(id);
  }

  #partition(): void {
    const ids = this.#c.ids();
    const a: NodeId[] = [];
    const b: NodeId[] = [];
    for (const id of ids) (this.#rng.int(2) === 0 ? a : b).push(id);
    this.#c.trace(`PARTITION [${a.join(',')}] | [${b.join(',')}]`);
    this.#c.net.partition([a, b], ids);
  }

  #oneWay(): void {
    const ids = this.#c.ids();
    const from = this.#pick(ids);
    const to = this.#pick(ids);
    if (from === undefined || to === undefined || from === to) return;
    this.#c.trace(`CUT ${from} → ${to}`);
    this.#c.net.cut(from, to);
  }

  #isolateLeader(): void {
    const l = this.#c.leader();
    if (l === undefined) return;
    this.#c.trace(`ISOLATE leader ${l.id}`);
    this.#c.net.isolate(l.id, this.#c.ids());
  }

  #heal(): void {
    if (this.#c.net.cutCount() === 0) return;
    this.#c.trace('HEAL network');
    this.#c.net.healAll(this.#plan.link);
  }

  #freeze(): void {
    const id = this.#pick(this.#upIds());
    if (id === undefined || this.#c.node(id).frozen) return;
    this.#c.freeze(id);
    this.#thawAt.set(id, this.#c.nowTicks() + 1 + this.#rng.int(4 * this.#c.raft.electionTicks));
  }

  #slowDisk(): void {
    const id = this.#pick(this.#c.ids());
    if (id === undefined) return;
    const d = this.#c.node(id).disk;
    const slow = this.#plan.disk.slowMinSteps;
    d.profile = { ...d.profile, syncMinSteps: slow, syncMaxSteps: 2 * slow };
    this.#c.trace(`SLOW DISK n${id}`);
    this.#fastDiskAt.set(id, this.#c.nowTicks() + 5 + this.#rng.int(5 * this.#c.raft.electionTicks));
  }

  #timers(): void {
    const now = this.#c.nowTicks();
    for (const [id, at] of this.#thawAt) {
      if (at > now) continue;
      this.#thawAt.delete(id);
      this.#c.thaw(id);
    }
    for (const [id, at] of this.#fastDiskAt) {
      if (at > now) continue;
      this.#fastDiskAt.delete(id);
      this.#c.node(id).disk.profile = { ...this.#plan.disk };
    }
  }

  /** Membership changes go to the leader (or a random node, to see the refusal). */
  #confChange(): void {
    const target = this.#c.leader() ?? this.#c.node(this.#pick(this.#upIds()) ?? 1n);
    const cs = target.confState;
    const roll = this.#rng.int(3);
    const live = this.#c.ids().filter((id) => !this.#c.node(id).removed).length;
    if (roll === 0 && live < clusterSizeMax) {
      // Seeds that start with a witness get a new one when theirs was removed.
      if (this.#c.checker.witnesses.size > 0 && (cs.witnesses ?? []).length === 0) this.#addWitness();
      else this.#addLearner();
    } else if (roll === 1) {
      const learner = this.#pick(cs.learners);
      if (learner !== undefined) this.#c.proposeConfChange(target.id, { type: 'addVoter', nodeId: learner });
    } else {
      const victim = this.#pick([...cs.voters, ...cs.learners]);
      if (victim === undefined || cs.voters.length <= 1) return;
      // FINDINGS.md F1: going from two voters to one can strand the survivor; only with --known-bugs.
      if (!this.#plan.knownBugs && cs.voters.length === 2 && cs.voters.includes(victim)) return;
      this.#c.proposeConfChange(target.id, { type: 'removeNode', nodeId: victim });
    }
  }

  #addLearner(): void {
    const live = this.#c.ids().filter((id) => !this.#c.node(id).removed).length;
    const target = this.#c.leader();
    if (target === undefined || live >= clusterSizeMax) return;
    const id = BigInt(this.#nextNewId);
    if (this.#c.proposeConfChange(target.id, { type: 'addLearner', nodeId: id }).ok) {
      this.#nextNewId++;
      this.#c.addNode(id);
    }
  }

  #addWitness(): void {
    const target = this.#c.leader();
    if (target === undefined) return;
    const id = BigInt(this.#nextNewId);
    if (this.#c.proposeConfChange(target.id, { type: 'addWitness', nodeId: id }).ok) {
      this.#nextNewId++;
      this.#c.addNode(id, { witness: true });
    }
  }

  /** Cut a learner off, so that (past its election timeout) a learner that may campaign would. */
  #isolateLearner(): void {
    const learner = this.#pick(this.#c.members().learners);
    if (learner === undefined) return;
    this.#c.trace(`ISOLATE learner ${learner}`);
    this.#c.net.isolate(learner, this.#c.ids());
  }

  /** One directed link gets its own profile: up to 30% loss, duplicates, up to two ticks of jitter. */
  #lossyLink(): void {
    const ids = this.#c.ids();
    const from = this.#pick(ids);
    const to = this.#pick(ids);
    if (from === undefined || to === undefined || from === to) return;
    const profile = {
      dropRate: this.#rng.next() * 0.3,
      dupRate: this.#rng.next() * 0.1,
      delaySteps: 1 + this.#rng.int(5),
      jitterSteps: this.#rng.int(2 * this.#c.stepsPerTick),
    };
    this.#c.trace(`LOSSY ${from} → ${to} (drop ${profile.dropRate.toFixed(2)})`);
    this.#c.net.setLink(from, to, profile);
  }

  #transfer(): void {
    const from = this.#c.leader()?.id ?? this.#pick(this.#upIds());
    if (from === undefined) return;
    const cs = this.#c.node(from).confState;
    const to = this.#pick([...cs.voters, ...cs.voters, ...cs.learners, from, 99n]);
    if (to !== undefined) this.#c.transferLeader(from, to);
  }

  /** End of chaos: thaw everyone, fast disks, a clean network. */
  healEverything(): void {
    this.#voteCrashDone = true;
    for (const id of [...this.#thawAt.keys()]) this.#c.thaw(id);
    this.#thawAt.clear();
    this.#fastDiskAt.clear();
    for (const id of this.#c.ids()) {
      const n = this.#c.node(id);
      if (n.frozen) this.#c.thaw(id);
      n.disk.profile = { ...this.#plan.disk, slowRate: 0 };
    }
    // A healed network still reorders, but its delays stay well under an election timeout.
    const link = this.#plan.link;
    this.#c.net.healAll({ dropRate: 0, dupRate: 0, delaySteps: link.delaySteps, jitterSteps: Math.min(link.jitterSteps, 5) });
    this.#c.trace('HEAL everything');
  }
}
