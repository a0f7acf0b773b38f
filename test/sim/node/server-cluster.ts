/**
 * A cluster of production members (server-node.ts) on one seed: the event loop (sim-loop.ts), an in-memory
 * peer network with the simulator's faults — loss, duplication, delay with jitter (so reordering), links cut
 * one way or both — and a disk per member whose syncs take a seeded time, sometimes long. Crashes lose what
 * was not synced; a restart boots the production code from what was.
 *
 * Like the real transport: a sender learns a peer is unreachable (down or cut off) one tick later
 * (reportUnreachable), and how a snapshot stream ended (reportSnapshot); losses on a lossy link go unnoticed.
 * A MsgSnap leaves through the production factory's snapshot bridge: the leader streams its backend, the data
 * lands in the follower's snapshot store, then the message arrives.
 */
import { Prng } from '../../../src/base/prng.js';
import { MessageType, type Message } from '../../../src/raft/types.js';
import type { Member } from '../../../src/node/server-api.js';
import type { Prng as SeedPrng } from '../../../src/base/prng.js';
import { ServerNode, type NodeEnv, type NodeTuning } from './server-node.js';
import { walDir } from './node-start.js';
import { damageWal, refusalProblem, type WalDamageKind } from './wal-damage.js';
import { SimLoop } from './sim-loop.js';
import { WitnessNode, type WitnessEnv } from './witness-node.js';

/** A member on the network: a data member, or a witness (no server, no data). */
type Peer = ServerNode | WitnessNode;

export interface LinkFaults {
  dropRate: number;
  duplicateRate: number;
  delayMinMs: number;
  delayMaxMs: number;
}

export interface DiskFaults {
  syncMinMs: number;
  syncMaxMs: number;
  /** Share of syncs that take slowMinMs..slowMaxMs instead. */
  slowRate: number;
  slowMinMs: number;
  slowMaxMs: number;
}

/** How soon a sender learns a peer is unreachable (the transport's dial fails). */
const unreachableReportMs = 100;

export const calmLink: LinkFaults = { dropRate: 0, duplicateRate: 0, delayMinMs: 1, delayMaxMs: 3 };
export const calmDisk: DiskFaults = { syncMinMs: 1, syncMaxMs: 3, slowRate: 0, slowMinMs: 0, slowMaxMs: 0 };

export interface ServerClusterOptions {
  seed: number;
  voters: number;
  /** Witnesses beside the data voters (witness-node.ts): ids voters+1…, addWitness in the initial log. */
  witnesses?: number;
  tuning: NodeTuning;
  trace?: (line: string) => void;
}

export class ServerCluster {
  readonly loop = new SimLoop();
  readonly rng: Prng;
  /** The data members (the workload's, the checks'). */
  readonly nodes: ServerNode[] = [];
  /** The witnesses: on the network and in the faults, never in the data checks. */
  readonly witnesses: WitnessNode[] = [];
  readonly #byUrl = new Map<string, Peer>();
  readonly #byId = new Map<bigint, Peer>();
  /** Directed cuts "from>to". */
  readonly #cuts = new Set<string>();
  readonly #netRng: Prng;
  readonly #diskRng: Prng;
  link: LinkFaults = calmLink;
  disk: DiskFaults = calmDisk;
  readonly fatal: string[] = [];
  /** The store revision after each applied index, as the first member to get there had it. */
  readonly #revisionAt = new Map<number, { revision: number; by: string }>();
  readonly traceLines: string[] = [];
  readonly #trace: ((line: string) => void) | undefined;
  crashes = 0;
  snapshotsSent = 0;
  /** Batches apply held back for a backend behind (the seed's backlog bound, run-node-seed.ts). */
  applyHolds = 0;
  /** Starts refused as the damage injected into complete WAL records required (wal-damage.ts). */
  walRefusals = 0;
  /** Called once a member is lost for good (its start refused): the seed's operator replaces it. */
  onLost: ((n: ServerNode) => void) | undefined;
  readonly #env: NodeEnv;
  /** Members a seed keeps crashed (a witness seed's liveness phase): no restart brings them back. */
  readonly keptDown = new Set<Peer>();

  constructor(o: ServerClusterOptions) {
    this.rng = new Prng(o.seed);
    this.#netRng = this.rng.fork();
    this.#diskRng = this.rng.fork();
    this.#trace = o.trace;
    const members: Member[] = [];
    for (let i = 1; i <= o.voters; i++) {
      members.push({ id: BigInt(i), name: `n${i}`, peerUrls: [`sim://n${i}:2380`], clientUrls: [`sim://n${i}:2379`], isLearner: false });
    }
    const witnessIds: bigint[] = [];
    for (let i = o.voters + 1; i <= o.voters + (o.witnesses ?? 0); i++) {
      members.push({ id: BigInt(i), name: `w${i}`, peerUrls: [`sim://w${i}:2380`], clientUrls: [`sim://w${i}:2379`], isLearner: false });
      witnessIds.push(BigInt(i));
    }
    const env: NodeEnv = {
      loop: this.loop,
      members,
      witnessIds,
      clusterId: 0xc105e4n,
      tuning: o.tuning,
      send: (from: ServerNode, messages: Message[]) => this.#send(from, messages),
      sendSnapshot: (from: ServerNode, m: Message, chunks: AsyncIterable<Uint8Array>) => this.#sendSnapshot(from, m, chunks),
      peerRequest: (from: ServerNode, url: string, method: string, payload: unknown) => this.#peerRequest(from, url, method, payload),
      syncDelayMs: () => this.#syncDelayMs(),
      onApplied: (node: ServerNode, index: number, revision: number, how: 'apply' | 'restore') => {
        if (process.env.SIM_TRACE_APPLY) this.trace(`n${node.id} ${how} → ${index} rev ${revision}`);
        const prior = this.#revisionAt.get(index);
        if (prior === undefined) this.#revisionAt.set(index, { revision, by: `n${node.id} ${how}` });
        else if (prior.revision !== revision) {
          this.fatal.push(`state-machine safety: n${node.id} (${how}) is at revision ${revision} after index ${index}, ${prior.by} was at ${prior.revision}`);
        }
      },
      onFatal: (node: ServerNode, error: unknown) => {
        this.fatal.push(`n${node.id}: ${error instanceof Error ? error.message : String(error)}`);
      },
      onApplyHold: () => void this.applyHolds++,
      trace: (line: string) => this.trace(line),
    };
    this.#env = env;
    for (const m of members) {
      if (witnessIds.includes(m.id)) this.#addWitness(m, { ...env, send: (from, msgs) => this.#send(from, msgs), peerRequest: (from, url, method, payload) => this.#peerRequest(from, url, method, payload), syncDelayMs: () => this.#syncDelayMs(), onFatal: (n, error) => void this.fatal.push(`n${n.id} (witness): ${error instanceof Error ? error.message : String(error)}`) });
      else this.addNode(m);
    }
  }

  #addWitness(m: Member, env: WitnessEnv): void {
    const w = new WitnessNode(m, env, this.rng.fork());
    this.witnesses.push(w);
    this.#byUrl.set(m.peerUrls[0]!, w);
    this.#byId.set(m.id, w);
  }

  /** Every member the faults reach: the data members, then the witnesses. */
  get members(): Peer[] {
    return this.witnesses.length === 0 ? this.nodes : [...this.nodes, ...this.witnesses];
  }

  /** A member the network knows from now on (an initial one, or one added to the configuration later). */
  addNode(m: Member): ServerNode {
    const n = new ServerNode(m, this.#env, this.rng.fork());
    this.nodes.push(n);
    this.#byUrl.set(m.peerUrls[0]!, n);
    this.#byId.set(m.id, n);
    return n;
  }

  trace(line: string): void {
    const l = `[${(this.loop.nowMs / 1000).toFixed(3)}s] ${line}`;
    if (this.traceLines.length >= 400) this.traceLines.shift();
    this.traceLines.push(l);
    this.#trace?.(l);
  }

  node(id: bigint | number): ServerNode {
    const n = this.#byId.get(BigInt(id));
    if (n === undefined || n instanceof WitnessNode) throw new Error(`no data member ${id}`);
    return n;
  }

  /** Boot (or reboot) a member; a boot that fails is fatal for the seed (the production member would exit). */
  start(n: Peer): void {
    const starting = n.start();
    const incarnation = n.incarnation; // start() counts it before its first await
    void starting.catch((error: unknown) => {
      if (!n.up || n.incarnation !== incarnation) return; // crashed while booting
      this.fatal.push(`n${n.id} failed to start: ${error instanceof Error ? error.message : String(error)}`);
    });
  }

  crash(n: Peer): void {
    if (!n.up) return;
    this.crashes++;
    this.trace(`n${n.id} CRASH`);
    n.crash();
  }

  restart(n: Peer): void {
    if (n.up || n.lost || this.keptDown.has(n)) return;
    this.trace(`n${n.id} RESTART`);
    if (n instanceof ServerNode && n.walDamage !== undefined) this.#startDamaged(n);
    else this.start(n);
  }

  /**
   * Crash `n` and damage a complete record of its WAL (wal-damage.ts); whether one qualified is known by the
   * next event (the damage runs in microtasks). Its next start must be refused.
   */
  crashDamaged(n: ServerNode, kind: WalDamageKind, rng: SeedPrng): void {
    if (!n.up || n.lost) return;
    this.crash(n);
    void damageWal(n.disk.fs, walDir, kind, rng).then((d) => {
      if (d === undefined) return void this.trace(`n${n.id}: no WAL record qualifies for ${kind}`);
      n.walDamage = d;
      this.trace(`n${n.id} WAL DAMAGE ${kind} at ${d.file}:${d.at} (record at ${d.recordOffset}${d.lastBatch ? ', last batch' : ''})`);
    });
  }

  /** A start on a damaged WAL: it must be refused as damage; then the member is lost for good. */
  #startDamaged(n: ServerNode): void {
    const d = n.walDamage!;
    const incarnation = n.incarnation + 1;
    const judge = (started: boolean, error: unknown): void => {
      if (n.incarnation !== incarnation || !n.up) return; // crashed while booting: judged at the next start
      const files = new Map<string, Uint8Array>();
      for (const f of d.image.keys()) {
        try {
          files.set(f, n.disk.fs.bytes(`${walDir}/${f}`).slice());
        } catch {
          // gone: refusalProblem names it
        }
      }
      const problem = refusalProblem(d, started, error, files);
      if (problem !== undefined) return void this.fatal.push(`n${n.id}: ${problem}`);
      this.walRefusals++;
      this.trace(`n${n.id} refused to start: ${error instanceof Error ? error.message : String(error)}; lost for good`);
      n.crash();
      n.lost = true;
      this.nodes.splice(this.nodes.indexOf(n), 1);
      this.onLost?.(n);
    };
    n.start().then(() => judge(true, undefined), (error: unknown) => judge(false, error));
  }

  cut(from: bigint, to: bigint): void {
    this.#cuts.add(`${from}>${to}`);
  }

  isolate(id: bigint): void {
    for (const n of this.members) {
      if (n.id === id) continue;
      this.cut(id, n.id);
      this.cut(n.id, id);
    }
  }

  heal(): void {
    this.#cuts.clear();
    this.link = calmLink;
    this.disk = calmDisk;
  }

  isCut(from: bigint, to: bigint): boolean {
    return this.#cuts.has(`${from}>${to}`);
  }

  /** The member serving as leader with the highest term, if any. */
  leader(): ServerNode | undefined {
    let best: ServerNode | undefined;
    for (const n of this.nodes) {
      const s = n.server;
      if (s !== undefined && s.isLeader && (best === undefined || s.term > best.server!.term)) best = n;
    }
    return best;
  }

  #reachable(from: Peer, to: Peer | undefined): to is Peer {
    // A member serves once its driver runs (a data member's server is set with it).
    return to !== undefined && to.driver !== undefined && !this.isCut(from.id, to.id);
  }

  #delayMs(): number {
    const l = this.link;
    return l.delayMinMs + this.#netRng.int(l.delayMaxMs - l.delayMinMs + 1);
  }

  #send(from: Peer, messages: Message[]): void {
    const owner = from.owner;
    for (const m of messages) {
      const to = this.#byId.get(m.to);
      if (!this.#reachable(from, to)) {
        this.loop.at(unreachableReportMs, () => from.driver?.reportUnreachable(m.to), owner);
        continue;
      }
      if (this.#netRng.next() < this.link.dropRate) continue;
      // A duplicated MsgProp would append the proposal twice: Raft proposals are not idempotent (nor are they
      // in etcd), and the peer transport's streams, like TCP, never deliver a frame twice.
      const duplicate = this.#netRng.next() < this.link.duplicateRate;
      const copies = duplicate && m.type !== MessageType.Prop ? 2 : 1;
      for (let i = 0; i < copies; i++) this.#deliver(to, { ...m, entries: m.entries.slice() });
    }
  }

  #deliver(to: Peer, m: Message): void {
    const incarnation = to.incarnation;
    this.loop.at(this.#delayMs(), () => {
      if (to.incarnation === incarnation) to.driver?.step([m]);
    });
  }

  /** The snapshot bridge's stream (src/main/snapshot-bridge.ts): the data lands in the follower's store, then the message. */
  async #sendSnapshot(from: ServerNode, m: Message, source: AsyncIterable<Uint8Array>): Promise<void> {
    const owner = from.owner;
    const chunks: Uint8Array[] = [];
    for await (const c of source) chunks.push(c.slice());
    const meta = m.snapshot!.meta;
    const to = this.#byId.get(m.to);
    // A witness holds no state: a snapshot's data never goes to one (the bridge sends it the metadata alone).
    if (to instanceof WitnessNode) this.fatal.push(`n${from.id} streamed snapshot data to the witness n${to.id}`);
    const ok = owner.alive && this.#reachable(from, to) && !(this.#netRng.next() < this.link.dropRate);
    if (ok) {
      this.snapshotsSent++;
      const incarnation = to.incarnation;
      this.loop.at(this.#delayMs(), () => {
        if (to.incarnation !== incarnation || to.driver === undefined) return;
        this.trace(`n${to.id} receives snapshot ${meta.term}/${meta.index} from n${from.id}`);
        // A refusal (no room on the follower's disk) fails the leader's send, as the production sink's error does.
        if (to instanceof ServerNode && !to.receiveSnapshot(meta, chunks)) return void (owner.alive && from.driver?.reportSnapshot(m.to, false));
        to.driver.step([m]);
      });
    }
    this.loop.at(this.#delayMs(), () => from.driver?.reportSnapshot(m.to, ok), owner);
  }

  async #peerRequest(from: Peer, url: string, method: string, payload: unknown): Promise<unknown> {
    const owner = from.owner;
    const to = this.#byUrl.get(url);
    await this.loop.sleep(this.#delayMs(), owner);
    if (!this.#reachable(from, to) || this.#netRng.next() < this.link.dropRate) {
      await this.loop.sleep(100, owner);
      throw new Error(`peer ${url} unreachable`);
    }
    let result: { ok: true; value: unknown } | { ok: false; error: unknown };
    try {
      result = { ok: true, value: await to.handlePeerRequest(method, payload) };
    } catch (error) {
      result = { ok: false, error };
    }
    await this.loop.sleep(this.#delayMs(), owner);
    if (!result.ok) throw result.error;
    return result.value;
  }

  #syncDelayMs(): number {
    const d = this.disk;
    const r = this.#diskRng;
    if (d.slowRate > 0 && r.next() < d.slowRate) return d.slowMinMs + r.int(d.slowMaxMs - d.slowMinMs + 1);
    return d.syncMinMs + r.int(d.syncMaxMs - d.syncMinMs + 1);
  }
}
