/**
 * A tiny in-test message pump for small multi-node tests of the core (the whole-cluster simulator with
 * faults lives in test/sim). Persistence is instant unless a node is put in `holdPersist` mode, in which case
 * its Readies wait in `held` until released.
 */
import { Prng } from '../../src/base/prng.js';
import { RawNode, decodeConfChange, EntryType } from '../../src/raft/index.js';
import type { ConfState, Entry, HardState, Message, RaftConfig, ReadState, Ready, Snapshot, SnapshotMeta } from '../../src/raft/index.js';

export interface PumpOptions {
  seed?: number;
  preVote?: boolean;
  checkQuorum?: boolean;
  learners?: bigint[];
  /** Voters (of `ids`) that are witnesses: their driver applies only conf changes and honours releaseLog. */
  witnesses?: bigint[];
  electionTicks?: number;
  heartbeatTicks?: number;
  maxMsgBytes?: number;
  maxInflightMsgs?: number;
  maxUncommittedBytes?: number;
  faults?: RaftConfig['unsafeTestFaults'];
}

export class Pump {
  readonly nodes = new Map<bigint, RawNode>();
  readonly applied = new Map<bigint, Entry[]>();
  readonly readStates = new Map<bigint, ReadState[]>();
  /** Messages in flight. */
  queue: Message[] = [];
  /** Every message ever sent (for assertions about what left when). */
  readonly sent: Message[] = [];
  /** Return true to drop a message. */
  drop: (m: Message) => boolean = () => false;
  readonly holdPersist = new Set<bigint>();
  readonly held = new Map<bigint, Ready[]>();
  /** Nodes whose state machine does not apply (their applied index stays put). */
  readonly noApply = new Set<bigint>();
  /** What each node made durable: its hard state, latest snapshot and log (as a restart would read it). */
  readonly durable = new Map<bigint, { hardState: HardState; snapshot: SnapshotMeta; entries: Entry[] }>();
  readonly #rngs = new Map<bigint, Prng>();
  /** Snapshots restored by each node (from Ready.snapshot). */
  readonly restored = new Map<bigint, Snapshot[]>();
  readonly #opts: PumpOptions;

  constructor(ids: bigint[], opts: PumpOptions = {}) {
    this.#opts = opts;
    const learners = opts.learners ?? [];
    const witnesses = opts.witnesses ?? [];
    const rng = new Prng(opts.seed ?? 1);
    for (const id of [...ids, ...learners]) {
      this.add(id, { voters: ids, learners, ...(witnesses.length > 0 ? { witnesses } : {}) }, rng.fork());
    }
  }

  /** One node's configuration from the pump's options (the same at first start and at restart). */
  #config(id: bigint, rng: Prng): RaftConfig {
    const o = this.#opts;
    const cfg: RaftConfig = {
      id,
      electionTicks: o.electionTicks ?? 10,
      heartbeatTicks: o.heartbeatTicks ?? 1,
      preVote: o.preVote ?? false,
      checkQuorum: o.checkQuorum ?? false,
      maxMsgBytes: o.maxMsgBytes ?? 1024 * 1024,
      maxInflightMsgs: o.maxInflightMsgs ?? 256,
      maxUncommittedBytes: o.maxUncommittedBytes ?? 1 << 30,
      rng,
    };
    if (o.faults !== undefined) cfg.unsafeTestFaults = o.faults;
    return cfg;
  }

  add(id: bigint, initial: ConfState | undefined, rng = new Prng(Number(id))): RawNode {
    const cfg = this.#config(id, rng);
    this.#rngs.set(id, rng);
    this.durable.set(id, {
      hardState: { term: 0, vote: 0n, commit: 0 },
      snapshot: { index: 0, term: 0, confState: { voters: [], learners: [] } },
      entries: [],
    });
    const node = new RawNode(cfg, {
      hardState: { term: 0, vote: 0n, commit: 0 },
      snapshot: { index: 0, term: 0, confState: { voters: [], learners: [] } },
      entries: [],
      ...(initial !== undefined ? { initialConfState: initial } : {}),
      applied: 0,
    });
    this.nodes.set(id, node);
    this.applied.set(id, []);
    this.readStates.set(id, []);
    this.held.set(id, []);
    return node;
  }

  node(id: bigint): RawNode {
    const n = this.nodes.get(id);
    if (n === undefined) throw new Error(`no node ${id}`);
    return n;
  }

  #send(msgs: Message[]): void {
    for (const m of msgs) {
      this.sent.push(m);
      if (!this.drop(m)) this.queue.push(m);
    }
  }

  /** Handle every pending Ready of `id` once. Returns true if there was one. */
  processReady(id: bigint): boolean {
    const n = this.node(id);
    if (!n.hasReady()) return false;
    const rd = n.ready();
    this.#send(rd.messages);
    this.readStates.get(id)!.push(...rd.readStates);
    // Committed entries are already durable locally: they may be applied while this Ready's writes are pending.
    if (rd.committedEntries.length > 0) this.#apply(id, rd.committedEntries);
    if (this.holdPersist.has(id)) this.held.get(id)!.push(rd);
    else this.#persisted(id, rd);
    return true;
  }

  #persisted(id: bigint, rd: Ready): void {
    const n = this.node(id);
    if (rd.snapshot !== undefined) {
      const list = this.restored.get(id) ?? [];
      list.push(rd.snapshot);
      this.restored.set(id, list);
    }
    this.#write(id, rd);
    this.#send(rd.messagesAfterPersist);
    n.onPersisted(rd.persistedUpTo);
  }

  #apply(id: bigint, entries: Entry[]): void {
    const n = this.node(id);
    const applied = this.applied.get(id)!;
    const witness = this.#opts.witnesses?.includes(id) === true;
    for (const e of entries) {
      if (e.type === EntryType.ConfChange) n.applyConfChange(decodeConfChange(e.data));
      // A witness's driver applies conf changes only: it has no state machine.
      if (!witness || e.type === EntryType.ConfChange) applied.push(e);
    }
    if (!this.noApply.has(id)) n.onApplied(entries[entries.length - 1]!.index);
  }

  #write(id: bigint, rd: Ready): void {
    const d = this.durable.get(id)!;
    if (rd.hardState !== undefined) d.hardState = { ...rd.hardState };
    if (rd.snapshot !== undefined) {
      d.snapshot = rd.snapshot.meta;
      d.entries = d.entries.filter((e) => e.index > rd.snapshot!.meta.index);
    }
    if (rd.entries.length > 0) {
      const first = rd.entries[0]!.index;
      d.entries = d.entries.filter((e) => e.index < first).concat(rd.entries);
    }
    if (rd.releaseLog !== undefined) {
      d.snapshot = rd.releaseLog;
      d.entries = d.entries.filter((e) => e.index > rd.releaseLog!.index);
    }
  }

  /** Crash `id` (losing held, unpersisted Readies) and restart it from its durable state. */
  restart(id: bigint, applied: number): RawNode {
    const d = this.durable.get(id)!;
    this.held.set(id, []);
    this.queue = this.queue.filter((m) => m.to !== id);
    const cfg = this.#config(id, this.#rngs.get(id)!.fork());
    const node = new RawNode(cfg, { hardState: d.hardState, snapshot: d.snapshot, entries: d.entries, applied });
    this.nodes.set(id, node);
    this.applied.set(id, this.applied.get(id)!.filter((e) => e.index <= applied));
    return node;
  }

  /** Persist every held Ready of `id` (in order). */
  releasePersist(id: bigint): void {
    const rds = this.held.get(id)!;
    this.held.set(id, []);
    for (const rd of rds) this.#persisted(id, rd);
  }

  deliverOne(): boolean {
    const m = this.queue.shift();
    if (m === undefined) return false;
    const n = this.nodes.get(m.to);
    if (n !== undefined) n.step(m);
    return true;
  }

  /** Process Readies and deliver messages until nothing moves (bounded). */
  stabilize(maxSteps = 100_000): void {
    for (let i = 0; i < maxSteps; i++) {
      let moved = false;
      for (const id of this.nodes.keys()) moved = this.processReady(id) || moved;
      while (this.deliverOne()) moved = true;
      if (!moved) return;
    }
    throw new Error('pump did not stabilize');
  }

  tick(id: bigint, times = 1): void {
    for (let i = 0; i < times; i++) this.node(id).tick();
  }

  tickAll(times = 1): void {
    for (let i = 0; i < times; i++) {
      for (const n of this.nodes.values()) n.tick();
      this.stabilize();
    }
  }

  /** Make `id` campaign now: tick it past any randomized timeout, then settle. */
  elect(id: bigint): void {
    const n = this.node(id);
    this.stabilize();
    for (let i = 0; i < 100 && n.status().role === 'follower'; i++) n.tick();
    this.stabilize();
  }

  leaders(): bigint[] {
    return [...this.nodes].filter(([, n]) => n.status().role === 'leader').map(([id]) => id);
  }

  /** Data of applied normal, non-empty entries of `id`, decoded as text. */
  appliedData(id: bigint): string[] {
    const dec = new TextDecoder();
    return this.applied
      .get(id)!
      .filter((e) => e.type === EntryType.Normal && e.data.byteLength > 0)
      .map((e) => dec.decode(e.data));
  }
}

export const enc = (s: string): Uint8Array => new TextEncoder().encode(s);
