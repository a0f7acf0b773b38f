/**
 * One production member under the simulator, built by the production factory (src/main/member-factory.ts:
 * RaftDriver + EtcdServer (apply, ReadIndex batcher, leader loops, proposer, watch hub) + the snapshot bridge)
 * from ports: the simulator's Scheduler, a disk of Wal on the simulated file system (test/wal/sim-fs.ts) +
 * ServerState/KvStore on the memory backend, and an in-memory peer network in place of timers and TCP. Left
 * out: gRPC, HTTP, bootstrap files and the join protocol (the initial members are written to the log as
 * main/member.ts's static bootstrap does).
 *
 * What survives a crash (NodeDisk), which is a power loss: the file system as its last syncs left it
 * (SimFs.crashImage), the backend as LevelDB would keep it (power-loss-backend.ts: what a synced write covered,
 * and a prefix of the batches written since), and received snapshot data (production keeps it in
 * <data-dir>/member/snap until the backend holds it durably).
 */
import { Prng } from '../../../src/base/prng.js';
import type { Backend } from '../../../src/mvcc/backend.js';
import { MvccError } from '../../../src/mvcc/types.js';
import { RawNode } from '../../../src/raft/raw-node.js';
import { EntryType, type Message, type RaftConfig, type SnapshotMeta } from '../../../src/raft/types.js';
import { decodeRequest } from '../../../src/node/driver/raft-request.js';
import type { Member } from '../../../src/node/server-api.js';
import { fromMvccError } from '../../../src/node/errors.js';
import type { EtcdServer } from '../../../src/node/etcd-server.js';
import { buildDataMember } from '../../../src/main/member-factory.js';
import type { RaftDriver } from '../../../src/node/driver/raft-driver.js';
import { createLogger, silentLogger } from '../../../src/config/log.js';
import type { Scheduler } from '../../../src/base/scheduler.js';
import { DiskRoom } from '../../../src/node/request/disk-room.js';
import { diskReserveBytes, startMemberDiskWatch } from '../../../src/main/disk-watch.js';
import type { StateOptions } from '../../../src/node/apply/server-state.js';
import { catchUpFromSnapshot, loadStateAndLog, type StorageDisk } from '../../../src/main/storage-open.js';
import type { TestFault } from '../../../src/config/test-faults.js';
import { Wal } from '../../../src/wal/wal.js';
import { restoreInto, type ImportExtras } from '../../../src/backup/import.js';
import type { RevisionRecord } from '../../../src/backup/revision-record.js';
import { SimFs } from '../../wal/sim-fs.js';
import { SimOwner, type SimLoop } from './sim-loop.js';
import { PowerLossBackend } from './power-loss-backend.js';
import type { WalDamage } from './wal-damage.js';
import { simAuthOptions } from './sim-auth.js';
import { beginIncarnation, bootstrapOnce, simPeerLinks, simRaftConfig, simWalOptions, walDir, walTuning } from './node-start.js';

export interface NodeDisk {
  fs: SimFs;
  backend: PowerLossBackend;
  /** Snapshot data received from a leader, by `term/index`, until the backend holds it. */
  received: Map<string, { index: number; chunks: Uint8Array[] }>;
  /**
   * The bootstrap is durable: the initial members' entries in the log, a restore point (a member built from a
   * backup), or nothing at all (a member added later, which learns everything from the leader).
   */
  bootstrapped: boolean;
  /** The disk watch's record that NOSPACE is the disk's (production: member/nospace-disk), kept across crashes. */
  noSpaceMarker: boolean;
}

export interface NodeTuning {
  heartbeatMs: number;
  electionMs: number;
  snapshotCount: number;
  preVote: boolean;
  maxMsgBytes: number;
  maxInflightMsgs: number;
  /** Apply waits for the backend past this backlog (a small one makes the hold happen all the time). */
  backendBacklogBytesMax: number;
  /** The log's commit-delay window (the emmc and sd profiles wait 1 and 4 ms), on the simulator's timers. */
  walCommitDelayMs: number;
  /** Segments zero-filled before use and recycled, as every production profile does. */
  walPreallocate: boolean;
  /** Auth seeds: the members' auth made deterministic, with short token TTLs (sim-auth.ts). */
  auth?: boolean;
  /**
   * Fill seeds (run-fill-seed.ts): each member's disk holds this many bytes — WAL segments, the backend's files
   * and received snapshots — and a write past it fails with ENOSPC; the production disk watch and the write
   * path's room count run against it (issue 32). Absent: a disk without a capacity, and no disk watch.
   */
  diskCapacityBytes?: number;
  /**
   * The disk watch sees the reserve as free space too, as if it kept a reserve of 0 (the check that a fill seed
   * can fail: run-fill-seed.ts).
   */
  diskReserveIgnored?: boolean;
  /** A received snapshot is kept without asking the disk's room (the check that a fill seed can fail). */
  snapshotRoomIgnored?: boolean;
  faults: Set<TestFault>;
}

/** What a node needs from the simulated cluster around it. */
export interface NodeEnv {
  loop: SimLoop;
  members: Member[];
  /** The initial members that are witnesses (witness-node.ts), written to the log as addWitness. */
  witnessIds: bigint[];
  clusterId: bigint;
  tuning: NodeTuning;
  /** This node's raft messages leave (the network decides what arrives, and when). */
  send(from: ServerNode, messages: Message[]): void;
  /**
   * A MsgSnap leaves with the leader's backend streamed behind it (the factory's snapshot bridge); the network
   * reports how it ended to the sender's driver.
   */
  sendSnapshot(from: ServerNode, message: Message, chunks: AsyncIterable<Uint8Array>): Promise<void>;
  /** A peer RPC from `from` to the member at `url`. */
  peerRequest(from: ServerNode, url: string, method: string, payload: unknown): Promise<unknown>;
  /** How long the next fsync of `node`'s disk takes (ms). */
  syncDelayMs(node: ServerNode): number;
  /**
   * State-machine safety at the server level: after applying through `index` (or restoring a snapshot at it)
   * the store is at `revision`; every member must agree on it for each index.
   */
  onApplied(node: ServerNode, index: number, revision: number, how: 'apply' | 'restore'): void;
  /** A failure the production member treats as fatal (it would exit): the seed fails. */
  onFatal(node: ServerNode, error: unknown): void;
  /** Apply waited for the node's backend (ApplyLoop.applyHold). */
  onApplyHold(node: ServerNode): void;
  trace(line: string): void;
}


export class ServerNode {
  readonly member: Member;
  readonly disk: NodeDisk = { fs: new SimFs(), backend: new PowerLossBackend(), received: new Map(), bootstrapped: false, noSpaceMarker: false };
  readonly #env: NodeEnv;
  readonly #rng: Prng;
  /** Member ids this node picks as a leader answering MemberAdd (its own stream: other draws do not shift them). */
  readonly #ids: Prng;
  server: EtcdServer | undefined;
  driver: RaftDriver | undefined;
  owner = new SimOwner();
  incarnation = 0;
  /** Started and not crashed (it may still be booting: `server` is set once it serves). */
  up = false;
  /** Complete records of its WAL were damaged at its last crash (wal-damage.ts): its next start must be refused. */
  walDamage: WalDamage | undefined;
  /** Writes that met a full disk (ENOSPC) on this member's WAL or backend (a fill seed fails on the first). */
  readonly enospc: string[] = [];
  /** Lost for good (its start was refused): never restarted; the operator replaces it (replace-member.ts). */
  lost = false;
  /** Snapshots from a leader this member refused for room on its disk (NOSPACE), and the index of the last. */
  snapshotsRefused = 0;
  lastRefusedSnapshotIndex = 0;
  /** This incarnation's count of the disk's room (a disk of a capacity only). */
  #room: DiskRoom | undefined;

  constructor(member: Member, env: NodeEnv, rng: Prng) {
    this.member = member;
    this.#env = env;
    this.#rng = rng;
    this.#ids = rng.fork();
  }

  get id(): bigint {
    return this.member.id;
  }

  /** A member added to the configuration by its leader: it boots with an empty log and learns from the leader. */
  prepareJoin(): void {
    this.disk.bootstrapped = true;
  }

  /**
   * A member built from a backup of another member's store (etcetera snapshot restore, migrate, cluster-reset
   * restore), written onto this node's disk by the production restore (src/backup/import.ts restoreInto).
   */
  async prepareRestore(members: Member[], records: RevisionRecord[], extras: Omit<ImportExtras, 'cluster'>): Promise<void> {
    const { wal } = await Wal.open(walDir, { fs: this.disk.fs, profile: 'ssd', tuning: walTuning });
    try {
      await restoreInto({ backend: this.disk.backend, wal }, members, records, extras);
    } finally {
      await wal.close();
    }
    this.disk.bootstrapped = true;
  }

  /** Start (or restart) from what the disk holds; resolves once the member serves (never, if it crashes first). */
  async start(): Promise<void> {
    const env = this.#env;
    const t = env.tuning;
    const disk = this.disk;
    const { owner, scheduler } = beginIncarnation(this, env.loop, disk.fs, () => env.syncDelayMs(this));
    const diskRoom = (this.#room = t.diskCapacityBytes !== undefined ? this.#withCapacity(t.diskCapacityBytes, owner) : undefined);
    const backend = guarded(disk.backend, owner);
    const stateOptions: StateOptions = { quotaBackendBytes: 0, minLeaseTtlSeconds: Math.ceil((3 * t.electionMs) / 2 / 1000) };
    // Received snapshot data stays on the disk until the backend holding it is durable (as <data-dir>/member/snap).
    const snapshotData = {
      source: async (meta: SnapshotMeta) => {
        const got = disk.received.get(snapKey(meta));
        return got === undefined ? undefined : () => iterate(got.chunks);
      },
      removeThrough: async (index: number) => {
        if (!owner.alive) return;
        for (const [key, got] of disk.received) if (got.index <= index) disk.received.delete(key);
      },
      removeAll: async () => disk.received.clear(),
    };
    // Opened as the CLI's member opens its data directory (src/main/storage-open.ts), on the simulated disk.
    const storageDisk: StorageDisk = {
      backend,
      stateOptions,
      logger: silentLogger(),
      openWal: (appliedIndex) => {
        const options = simWalOptions(disk.fs, scheduler, owner, t, (error) => env.onFatal(this, error));
        if (t.walPreallocate) options.tuning = { ...options.tuning, preallocate: true, recycleSegmentsMax: 2 };
        return Wal.open(walDir, { ...options, appliedIndex });
      },
      snapshotData,
      behindSnapshot: () => new Error(`n${this.id}: backend behind the log's snapshot and its data gone`),
    };
    const opened = await loadStateAndLog(storageDisk);
    const { wal, walState } = opened;
    const { state, applied } = await catchUpFromSnapshot(storageDisk, opened);
    // Nothing to catch up from on an empty disk: the new cluster's log is written after.
    await bootstrapOnce(disk, wal, walState, env.members, env.witnessIds);
    const config: RaftConfig = { ...simRaftConfig(this.id, t, this.#rng), applyUnstable: true };
    const node = new RawNode(config, { hardState: walState.hardState, snapshot: walState.snapshot, entries: walState.entries, applied });
    if (walState.snapshot.index > 0) node.compact({ meta: walState.snapshot, data: new Uint8Array(0) }, 0);
    const member = await buildDataMember({
      scheduler,
      disk: {
        wal,
        backend,
        state,
        stateOptions,
        applied,
        snapshotIndex: walState.snapshot.index,
        snapshotData,
      },
      network: () => ({
        ...simPeerLinks(this, owner, env),
        peerUrls: this.member.peerUrls,
        sendSnapshot: (message, chunks) => env.sendSnapshot(this, message, chunks),
        tellRemoved: async (url, id) => {
          await env.peerRequest(this, url, 'removed', { id });
          return true;
        },
      }),
    }, {
      raft: node,
      ...(diskRoom !== undefined ? { diskRoom } : {}),
      memberId: this.id,
      clusterId: env.clusterId,
      name: this.member.name,
      clientUrls: this.member.clientUrls,
      logger: silentLogger(),
      heartbeatMs: t.heartbeatMs,
      electionMs: t.electionMs,
      snapshotCount: t.snapshotCount,
      backendBacklogBytesMax: t.backendBacklogBytesMax,
      randomMemberId: () => (BigInt(this.#ids.int(2 ** 32)) << 32n) | BigInt(this.#ids.int(2 ** 32)),
      ...(t.faults.size > 0 ? { unsafeTestFaults: t.faults } : {}),
      // Token prefixes from a stream of the member and incarnation (the seed's other draws stay as they were).
      ...(t.auth === true ? { auth: simAuthOptions(new Prng(Number(this.id % 0x7fffffffn) ^ (this.incarnation * 0x2545f491))) } : {}),
      onRemoved: () => env.trace(`n${this.id} removed`),
      onFatal: (error) => owner.alive && env.onFatal(this, error),
    });
    if (!owner.alive) return;
    this.server = member.server;
    this.driver = member.driver;
    member.start(this.#observed(member.server));
    if (diskRoom !== undefined) await this.#startDiskWatch(member.server, diskRoom, scheduler);
    if (!owner.alive) return;
    env.trace(`n${this.id} serving (incarnation ${this.incarnation}, applied ${applied}, log ${walState.snapshot.index}+${walState.entries.length})`);
  }

  /** The disk of a capacity: the WAL's files, the backend's and received snapshots share it (the crash image keeps none). */
  #withCapacity(capacityBytes: number, owner: SimOwner): DiskRoom {
    const disk = this.disk;
    const full = (what: string): void => {
      if (!owner.alive) return;
      this.enospc.push(what);
      this.#env.trace(`n${this.id} ENOSPC: ${what}`);
    };
    const otherBytes = (): number => {
      let n = disk.backend.diskBytes;
      for (const got of disk.received.values()) for (const c of got.chunks) n += c.length;
      return n;
    };
    disk.fs.options.space = { capacityBytes, otherBytes, onFull: (path) => full(path) };
    disk.backend.room = (bytes) => {
      if (disk.fs.usedBytes() + otherBytes() + bytes <= capacityBytes) return true;
      full(`backend (+${bytes} bytes)`);
      return false;
    };
    return new DiskRoom();
  }

  /** The production disk watch (main/disk-watch.ts) on the simulated disk, polled on the member's Raft tick. */
  async #startDiskWatch(server: EtcdServer, room: DiskRoom, scheduler: Scheduler): Promise<void> {
    const env = this.#env;
    const disk = this.disk;
    const logger = createLogger({
      level: 'info',
      now: () => String(env.loop.nowMs),
      sink: (line) => env.trace(`n${this.id} ${line.trim()}`),
      sinkSync: () => {},
    });
    await startMemberDiskWatch(this.id, server, room, {
      dirs: [walDir],
      freeBytes: async (dir) => {
        const free = await disk.fs.freeBytes(dir);
        return free !== undefined && env.tuning.diskReserveIgnored === true ? free + diskReserveBytes(server.state.store.dbSizeBytes()) : free;
      },
      marker: { present: async () => disk.noSpaceMarker, set: async (raised) => void (disk.noSpaceMarker = raised) },
      advice: 'delete keys, compact, defragment',
      logger,
      alarmSignal: () => {
        const ac = new AbortController();
        scheduler.after(env.tuning.electionMs * 5, () => ac.abort(new Error('request timed out')));
        return ac.signal;
      },
    });
  }

  /** The driver's view of the application, reporting each applied index's store revision to the checker. */
  #observed(server: EtcdServer): ReturnType<EtcdServer['driverApp']> {
    const app = server.driverApp();
    const env = this.#env;
    return {
      ...app,
      applyHold: () => {
        const hold = app.applyHold();
        if (hold !== undefined) env.onApplyHold(this);
        return hold;
      },
      applyEntries: (entries) => {
        if (process.env.SIM_TRACE_APPLY) {
          for (const e of entries) {
            if (e.type !== EntryType.Normal || e.data.length === 0) continue;
            const req = decodeRequest(e.data).req;
            if (req.kind.startsWith('lease')) env.trace(`n${this.id} applies ${e.index}@${e.term} ${req.kind} ${JSON.stringify(req, (_k, v) => (typeof v === 'bigint' ? v.toString(16) : v))}`);
          }
        }
        app.applyEntries(entries);
        env.onApplied(this, entries[entries.length - 1]!.index, server.state.store.revision, 'apply');
      },
      onSoftState: (st, previous) => {
        if (process.env.SIM_TRACE_APPLY) env.trace(`n${this.id} soft state ${st.role} leader n${st.leader}`);
        app.onSoftState(st, previous);
      },
      onStable: (index) => {
        if (process.env.SIM_TRACE_APPLY) env.trace(`n${this.id} stable ${index}`);
        app.onStable(index);
      },
      restoreSnapshot: async (snapshot) => {
        await app.restoreSnapshot(snapshot);
        env.onApplied(this, snapshot.meta.index, server.state.store.revision, 'restore');
      },
    };
  }

  /** Power off: every timer and pending write of this incarnation dies; the disk keeps only what was synced. */
  crash(): void {
    if (!this.up) return;
    this.owner.alive = false;
    this.up = false;
    this.server = undefined;
    this.driver = undefined;
    // What the power loss leaves: from a stream of the member id and incarnation, so these draws shift no other
    // random choice of the seed (seeds found before power losses and torn writes keep their trajectories).
    const loss = new Prng(Number(this.member.id % 0x7fffffffn) ^ (this.incarnation * 0x9e3779b1));
    // The log's last write, if no sync covered it, may be torn: a prefix of it or some of its sectors landed.
    const tear = (['none', 'prefix', 'sectors'] as const)[loss.int(3)]!;
    this.disk.fs = this.disk.fs.crashImage(tear, () => loss.int(1 << 30) / (1 << 30));
    const unsynced = this.disk.backend.unsyncedBatches;
    if (unsynced > 0) this.disk.backend.powerLoss(loss.int(unsynced + 1));
  }

  /**
   * A snapshot's data arrives before its message, as the transport's snapshot sink stores it: on a disk of a
   * capacity each chunk is admitted by the production rule first (DiskRoom.receiveSnapshot, as
   * storage/snapshot-data.ts's receiver does); false when refused (nothing is kept, the leader sends again).
   */
  receiveSnapshot(meta: SnapshotMeta, chunks: Uint8Array[]): boolean {
    const admission = this.#env.tuning.snapshotRoomIgnored === true ? undefined : this.#room?.receiveSnapshot(this.server?.state.store.dbSizeBytes() ?? 0);
    if (admission !== undefined) {
      let written = 0;
      for (const c of chunks) {
        if (admission.admit(c.length)) {
          written += c.length;
          continue;
        }
        this.snapshotsRefused++;
        this.lastRefusedSnapshotIndex = meta.index;
        const total = chunks.reduce((n, x) => n + x.length, 0);
        this.#env.trace(`n${this.id} refuses snapshot ${meta.term}/${meta.index} after ${written} of ${total} bytes: no room to restore it above the reserve`);
        return false;
      }
      admission.received();
    }
    this.disk.received.set(snapKey(meta), { index: meta.index, chunks });
    return true;
  }

  /** Serve a peer RPC the way the transport's onRequest does (MvccErrors become etcd's errors). */
  async handlePeerRequest(method: string, payload: unknown): Promise<unknown> {
    const server = this.server;
    if (server === undefined) throw new Error('unreachable');
    try {
      if (process.env.SIM_TRACE_APPLY && method.startsWith('lease')) {
        const id = (payload as { id: bigint }).id;
        const now = this.#env.loop.nowMs;
        let ttl = 'none';
        try { ttl = String(server.state.lessor.timeToLive(id, now, false).ttlSeconds); } catch { /* gone */ }
        this.#env.trace(`n${this.id} serves ${method} ${id.toString(16)} leader=${server.isLeader} ttl-left=${ttl}`);
      }
      return await server.handlePeerRequest(method, payload);
    } catch (error) {
      throw error instanceof MvccError ? fromMvccError(error) : error;
    }
  }
}

function snapKey(meta: SnapshotMeta): string {
  return `${meta.term}/${meta.index}`;
}

async function* iterate(chunks: Uint8Array[]): AsyncIterable<Uint8Array> {
  for (const c of chunks) yield c;
}

/**
 * The backend as one incarnation sees it: once the node crashed, its writes never land (a dead process
 * writes nothing) and never settle, so its pending work stops there.
 */
function guarded(backend: PowerLossBackend, owner: SimOwner): Backend {
  return new Proxy(backend, {
    get(target, prop) {
      const value = Reflect.get(target, prop, target) as unknown;
      if (typeof value !== 'function') return value;
      if (prop === 'write' || prop === 'clear') {
        return (...args: unknown[]) => (owner.alive ? (value as (...a: unknown[]) => unknown).apply(target, args) : new Promise(() => {}));
      }
      return (value as (...a: unknown[]) => unknown).bind(target);
    },
  }) as Backend;
}
