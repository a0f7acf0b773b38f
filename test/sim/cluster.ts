/**
 * A whole cluster in one process: 1–7 (and more over time, as members come and go) SimNodes on one seed, a
 * simulated network and one simulated disk per node, on a manual clock counted in steps (`stepsPerTick` steps
 * make one Raft tick; each node ticks at its own phase within the tick). Everything happens through one event
 * queue (deliveries, disk syncs, ticks), so a run is a pure function of the seed and the script.
 *
 * Scripted tests (the golden stories) and the random chaos generator both drive this class.
 */
import { Prng } from '../../src/base/prng.js';
import type { ConfChange, ConfState, Message, NodeId, ProposeResult, RaftConfig } from '../../src/raft/types.js';
import { defaultRaftTuning, type ClusterOptions, type RaftTuning } from './cluster-options.js';
import { describeMessage } from './describe.js';
import { MessageType } from '../../src/raft/types.js';
import { Checker } from './checker.js';
import { EventQueue } from './event-queue.js';
import { SimDisk, fastDisk } from './disk.js';
import { SimNetwork, perfectLink } from './network.js';
import { SimNode, type NodeEnv } from './sim-node.js';
import { utf8 } from '../../src/base/bytes.js';
import { encodeProposal } from './state-machine.js';

export { defaultRaftTuning, type ClusterOptions, type RaftTuning } from './cluster-options.js';

type SimEvent =
  | { kind: 'deliver'; m: Message; incarnation: number }
  | { kind: 'disk'; id: NodeId; incarnation: number }
  | { kind: 'tick'; id: NodeId; incarnation: number }
  | { kind: 'stop'; id: NodeId }
  | { kind: 'call'; fn: () => void }
  | { kind: 'report'; id: NodeId; incarnation: number; peer: NodeId; snapshot: 'ok' | 'failed' | undefined };

export class Cluster {
  readonly rng: Prng;
  readonly net: SimNetwork;
  readonly checker: Checker;
  readonly stepsPerTick: number;
  readonly nodes = new Map<NodeId, SimNode>();
  readonly raft: RaftTuning;
  /** Proposal id → first node that applied it (the client's acknowledgement). */
  readonly acked = new Map<number, NodeId>();
  #events = new EventQueue<SimEvent>();
  #now = 0;
  #nodeRng: Prng;
  #diskRng: Prng;
  #options: ClusterOptions;
  #held = new Map<NodeId, Message[]>();
  #missedTicks = new Map<NodeId, number>();
  #nextProposalId = 1;
  #nextReadId = 1;
  /** Each node's configuration when brand new (initial members only). */
  #initial = new Map<NodeId, ConfState | undefined>();
  #stopScheduled = new Set<NodeId>();
  #tickPaused = new Set<NodeId>();
  traceLines: string[] = [];
  /** Distinct membership changes applied somewhere, and crashes: for run statistics. */
  readonly confChangesApplied = new Set<string>();
  crashes = 0;

  constructor(options: ClusterOptions) {
    this.#options = options;
    this.rng = new Prng(options.seed);
    this.net = new SimNetwork(this.rng.fork(), options.link ?? perfectLink);
    this.#nodeRng = this.rng.fork();
    this.#diskRng = this.rng.fork();
    this.checker = new Checker(options.checks);
    this.stepsPerTick = options.stepsPerTick ?? 10;
    this.raft = { ...defaultRaftTuning, ...options.raft };
    const voters: NodeId[] = [];
    for (let i = 1; i <= options.voters; i++) voters.push(BigInt(i));
    const witnesses = voters.slice(voters.length - (options.witnesses ?? 0));
    for (const id of voters) this.checker.everVoters.add(id);
    for (const id of witnesses) this.checker.witnesses.add(id);
    const initial: ConfState = witnesses.length > 0 ? { voters, learners: [], witnesses } : { voters, learners: [] };
    for (const id of voters) this.#create(id, initial, witnesses.includes(id));
  }

  get nowStep(): number {
    return this.#now;
  }

  nowTicks(): number {
    return Math.floor(this.#now / this.stepsPerTick);
  }

  node(id: NodeId | number): SimNode {
    const n = this.nodes.get(BigInt(id));
    if (n === undefined) throw new Error(`no node ${id}`);
    return n;
  }

  ids(): NodeId[] {
    return [...this.nodes.keys()];
  }

  #create(id: NodeId, initial: ConfState | undefined, witness: boolean): SimNode {
    const disk = new SimDisk(this.#diskRng.fork(), this.#options.disk ?? fastDisk);
    const tuning = { compactEvery: 1_000_000, keepEntries: 0, ...this.#options.node };
    const env: NodeEnv = { ...this.#envFor(), nowStep: () => this.#now };
    const n = new SimNode(id, disk, env, tuning, witness);
    this.nodes.set(id, n);
    this.#initial.set(id, initial);
    this.#startNode(n);
    return n;
  }

  #envFor(): Omit<NodeEnv, 'nowStep'> {
    return {
      checker: this.checker,
      send: (m) => this.#send(m),
      scheduleDisk: (id, at) => this.#events.push(at, { kind: 'disk', id, incarnation: this.node(id).incarnation }),
      onApplied: (id, pid) => {
        if (!this.acked.has(pid)) this.acked.set(pid, id);
      },
      onConfChange: (id, cc) => this.#onConfChange(id, cc),
      trace: (line) => this.trace(line),
    };
  }

  /**
   * Like etcd, a removed node stops one election timeout after its removal is applied (by itself: etcd's
   * stopWithDelay of 10 ticks, so the leader can still propagate the commit; or by a peer: etcd peers answer a
   * removed member "410 Gone" and it shuts down).
   */
  #onConfChange(id: NodeId, cc: ConfChange): void {
    this.trace(`n${id} applied ${cc.type} ${cc.nodeId}`);
    this.confChangesApplied.add(`${cc.type} ${cc.nodeId}`);
    if (cc.type !== 'removeNode' || this.#stopScheduled.has(cc.nodeId)) return;
    this.#stopScheduled.add(cc.nodeId);
    this.#events.push(this.#now + this.raft.electionTicks * this.stepsPerTick, { kind: 'stop', id: cc.nodeId });
  }

  trace(line: string): void {
    const l = `[t${this.nowTicks()}.${this.#now % this.stepsPerTick}] ${line}`;
    if (this.traceLines.length >= 400) this.traceLines.shift();
    this.traceLines.push(l);
    this.#options.trace?.(l);
  }

  #config(id: NodeId): RaftConfig {
    return { ...this.raft, id, rng: this.#nodeRng.fork() };
  }

  #startNode(n: SimNode): void {
    n.start(this.#config(n.id), this.#initial.get(n.id));
    const phase = this.#nodeRng.int(this.stepsPerTick);
    const next = (Math.floor(this.#now / this.stepsPerTick) + 1) * this.stepsPerTick + phase;
    this.#events.push(next, { kind: 'tick', id: n.id, incarnation: n.incarnation });
    this.#afterInput(n);
  }

  /**
   * Put a message on the network. Like a real transport, the sender learns (one tick later) when a peer is
   * unreachable (down or cut off: reportUnreachable) and how a snapshot send ended (reportSnapshot); plain
   * losses on a lossy link go unnoticed.
   */
  #send(m: Message): void {
    this.onSend?.(m);
    const to = this.nodes.get(m.to);
    const from = this.node(m.from);
    const reachable = to !== undefined && to.up && !this.net.isCut(m.from, m.to);
    const delays = to !== undefined && to.up ? this.net.delaysFor(m.from, m.to) : [];
    for (const d of delays) {
      this.#events.push(this.#now + d, { kind: 'deliver', m: { ...m, entries: m.entries.slice() }, incarnation: to!.incarnation });
    }
    const isSnap = m.type === MessageType.Snap;
    if (reachable && !isSnap) return;
    const snapshot = isSnap ? (delays.length > 0 ? 'ok' : 'failed') : undefined;
    const report = { kind: 'report', id: m.from, incarnation: from.incarnation, peer: m.to, snapshot } as const;
    this.#events.push(this.#now + (delays[0] ?? this.stepsPerTick), report);
  }

  /** After any input to a node: settle its Readies. */
  #afterInput(n: SimNode): void {
    n.drain();
  }

  #run(e: SimEvent): void {
    if (e.kind === 'deliver') {
      const n = this.nodes.get(e.m.to);
      if (n === undefined || !n.up || n.incarnation !== e.incarnation) return;
      if (n.frozen) {
        this.#held.get(n.id)!.push(e.m);
        return;
      }
      if (this.#options.traceMessages === true) this.trace(describeMessage(e.m));
      n.raw!.step(e.m);
      this.#afterInput(n);
      return;
    }
    if (e.kind === 'call') {
      e.fn();
      return;
    }
    if (e.kind === 'stop') {
      const n = this.nodes.get(e.id);
      if (n === undefined) return;
      n.removed = true;
      if (n.up) {
        this.trace(`n${n.id} removed: stopping`);
        n.crash();
      }
      return;
    }
    const n = this.nodes.get(e.id);
    if (n === undefined || !n.up || n.incarnation !== e.incarnation) return;
    if (e.kind === 'disk') {
      n.onDisk();
      this.#afterInput(n);
      return;
    }
    if (e.kind === 'report') {
      if (n.frozen) return;
      if (e.snapshot === undefined) n.raw!.reportUnreachable(e.peer);
      else n.raw!.reportSnapshot(e.peer, e.snapshot === 'ok');
      this.#afterInput(n);
      return;
    }
    this.#events.push(this.#now + this.stepsPerTick, e);
    if (this.#tickPaused.has(n.id)) return;
    if (n.frozen) {
      this.#missedTicks.set(n.id, (this.#missedTicks.get(n.id) ?? 0) + 1);
      return;
    }
    n.raw!.tick();
    this.#afterInput(n);
  }

  /** Run every event due up to and including step `until`. */
  runToStep(until: number): void {
    for (;;) {
      const t = this.#events.peekTime();
      if (t === undefined || t > until) break;
      const e = this.#events.pop()!;
      this.#now = e.timeStep;
      this.#run(e.value);
    }
    this.#now = until;
  }

  runSteps(n: number): void {
    this.runToStep(this.#now + n);
  }

  runTicks(n: number): void {
    this.runSteps(n * this.stepsPerTick);
  }

  /** Run event by event until `done()` holds (checked after every event); returns whether it did. */
  runEventsUntil(done: () => boolean, maxTicks: number): boolean {
    const until = this.#now + maxTicks * this.stepsPerTick;
    while (!done()) {
      const t = this.#events.peekTime();
      if (t === undefined || t > until) return false;
      const e = this.#events.pop()!;
      this.#now = e.timeStep;
      this.#run(e.value);
    }
    return true;
  }

  /** Run tick by tick until `done()` holds; returns the ticks it took, or undefined if it never did. */
  runUntil(done: () => boolean, maxTicks: number): number | undefined {
    for (let t = 0; ; t++) {
      if (done()) return t;
      if (t === maxTicks) return undefined;
      this.runTicks(1);
    }
  }

  /** Observe every message a node sends (before the network sees it). Must not call into nodes: use `at`. */
  onSend: ((m: Message) => void) | undefined;

  /** Run `fn` at step `atStep` (after the events already due then). */
  at(atStep: number, fn: () => void): void {
    this.#events.push(Math.max(atStep, this.#now), { kind: 'call', fn });
  }

  /** Stop (or resume) a node's ticks while it keeps receiving: scripted stories use it to pick who times out. */
  pauseTicks(id: NodeId | number, paused: boolean): void {
    if (paused) this.#tickPaused.add(BigInt(id));
    else this.#tickPaused.delete(BigInt(id));
  }

  /** Lose every message in flight that matches (scripted stories: "the leader's appends never arrive"). */
  dropInFlight(match: (m: Message) => boolean): void {
    this.#events.removeWhere((e) => e.kind === 'deliver' && match(e.m));
  }

  // ---- node lifecycle -------------------------------------------------------------------------------------

  crash(id: NodeId | number): void {
    const n = this.node(id);
    if (!n.up) return;
    this.trace(`n${n.id} CRASH (lost ${n.disk.pendingCount} unsynced writes)`);
    this.crashes++;
    n.crash();
    this.#held.delete(n.id);
  }

  restart(id: NodeId | number): void {
    const n = this.node(id);
    if (n.up || n.removed) return;
    this.trace(`n${n.id} RESTART`);
    this.#startNode(n);
  }

  /** A new, empty node process (to be added with a conf change): a data member, or a witness process. */
  addNode(id: NodeId | number, options: { witness?: boolean } = {}): SimNode {
    const nid = BigInt(id);
    if (this.nodes.has(nid)) throw new Error(`node ${nid} exists`);
    const witness = options.witness === true;
    this.trace(`n${nid} NEW (empty${witness ? ' witness' : ''})`);
    if (witness) this.checker.witnesses.add(nid);
    return this.#create(nid, undefined, witness);
  }

  /** Stop the node's process (SIGSTOP): no ticks, messages and disk completions wait. */
  freeze(id: NodeId | number): void {
    const n = this.node(id);
    if (!n.up || n.frozen) return;
    this.trace(`n${n.id} FREEZE`);
    n.frozen = true;
    this.#held.set(n.id, []);
    this.#missedTicks.set(n.id, 0);
  }

  /** Resume a frozen node: its clock jumps (it ticks the missed ticks at once, capped), then its mail arrives. */
  thaw(id: NodeId | number): void {
    const n = this.node(id);
    if (!n.frozen) return;
    n.frozen = false;
    const missed = Math.min(this.#missedTicks.get(n.id) ?? 0, this.#options.thawTicksMax ?? 5 * this.raft.electionTicks);
    this.trace(`n${n.id} THAW (${missed} ticks at once)`);
    for (let i = 0; i < missed && n.up; i++) {
      n.raw!.tick();
      this.#afterInput(n);
    }
    const held = this.#held.get(n.id) ?? [];
    this.#held.delete(n.id);
    for (const m of held) {
      if (!n.up) break;
      n.raw!.step(m);
      this.#afterInput(n);
    }
    n.onDisk();
    this.#afterInput(n);
  }

  // ---- client operations ----------------------------------------------------------------------------------

  /**
   * Propose a fresh put on `id` (or re-propose `proposalId`); returns its id and the core's answer. A witness
   * process has no client API: a client that picks one is refused there (the core's own refusal is unit-tested).
   */
  propose(id: NodeId | number, proposalId?: number): { proposalId: number; result: ProposeResult } {
    const n = this.node(id);
    const pid = proposalId ?? this.#nextProposalId++;
    if (!n.up || n.frozen || n.witness) return { proposalId: pid, result: { ok: false, error: 'noLeader' } };
    const result = n.raw!.propose(encodeProposal(pid));
    this.#afterInput(n);
    return { proposalId: pid, result };
  }

  proposeConfChange(id: NodeId | number, cc: Omit<ConfChange, 'context'>): ProposeResult {
    const n = this.node(id);
    if (!n.up || n.frozen) return { ok: false, error: 'notLeader' };
    if (cc.type === 'addVoter' || cc.type === 'addWitness') this.checker.everVoters.add(cc.nodeId);
    const result = n.raw!.proposeConfChange({ ...cc, context: new Uint8Array() });
    this.trace(`n${n.id} propose ${cc.type} ${cc.nodeId}: ${result.ok ? 'ok' : result.error}`);
    this.#afterInput(n);
    return result;
  }

  transferLeader(id: NodeId | number, transferee: NodeId | number): void {
    const n = this.node(id);
    if (!n.up || n.frozen) return;
    this.trace(`n${n.id} transferLeader → ${transferee}`);
    n.raw!.transferLeader(BigInt(transferee));
    this.#afterInput(n);
  }

  /** Issue a ReadIndex request on `id`; its answer is checked for linearizability when it comes. */
  readIndex(id: NodeId | number): string {
    const n = this.node(id);
    const ctx = `r${this.#nextReadId++}`;
    if (!n.up || n.frozen || n.witness) return ctx;
    this.checker.onReadIssued(ctx);
    n.raw!.readIndex(utf8(ctx));
    this.#afterInput(n);
    return ctx;
  }

  // ---- observations ---------------------------------------------------------------------------------------

  /** The up data member that believes it is leader with the highest term (undefined if none). */
  dataLeader(): SimNode | undefined {
    const l = this.leader();
    return l?.witness === true ? undefined : l;
  }

  /** The up node that believes it is leader with the highest term (undefined if none). */
  leader(): SimNode | undefined {
    let best: SimNode | undefined;
    for (const n of this.nodes.values()) {
      if (n.up && !n.frozen && n.role === 'leader' && (best === undefined || n.hs.term > best.hs.term)) best = n;
    }
    return best;
  }

  /** Ids that are members in the configuration the leader (or else the most advanced node) has applied. */
  members(): ConfState {
    const l = this.leader();
    let src = l;
    if (src === undefined) for (const n of this.nodes.values()) if (src === undefined || n.appliedIndex > src.appliedIndex) src = n;
    return src?.confState ?? { voters: [], learners: [] };
  }
}
