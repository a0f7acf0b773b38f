/**
 * A witness member under the production-node simulator, built by the production factory
 * (src/main/witness-factory.ts: the Raft driver over a log tail, conf changes applied, its peers kept) from
 * ports: the simulator's Scheduler, a Wal on the simulated file system, the in-memory peer network. Left out
 * as for server-node.ts: gRPC, HTTP, bootstrap files and the join protocol (it is an initial member, written
 * to the log as a static bootstrap with --initial-cluster-witnesses does).
 *
 * A crash is a power loss: the file system as its last syncs left it. It has no backend and no snapshot store.
 */
import { Prng } from '../../../src/base/prng.js';
import { RawNode } from '../../../src/raft/raw-node.js';
import type { Message } from '../../../src/raft/types.js';
import type { Member } from '../../../src/node/server-api.js';
import type { RaftDriver } from '../../../src/node/driver/raft-driver.js';
import { buildWitnessMember } from '../../../src/main/witness-factory.js';
import { silentLogger } from '../../../src/config/log.js';
import { Wal } from '../../../src/wal/wal.js';
import { SimFs } from '../../wal/sim-fs.js';
import { SimOwner, type SimLoop } from './sim-loop.js';
import type { NodeTuning } from './server-node.js';
import { beginIncarnation, bootstrapOnce, simPeerLinks, simRaftConfig, simWalOptions, walDir } from './node-start.js';

/** What a witness needs from the simulated cluster around it. */
export interface WitnessEnv {
  loop: SimLoop;
  members: Member[];
  witnessIds: bigint[];
  tuning: NodeTuning;
  send(from: WitnessNode, messages: Message[]): void;
  peerRequest(from: WitnessNode, url: string, method: string, payload: unknown): Promise<unknown>;
  syncDelayMs(): number;
  onFatal(node: WitnessNode, error: unknown): void;
  trace(line: string): void;
}

export class WitnessNode {
  readonly member: Member;
  readonly disk = { fs: new SimFs(), bootstrapped: false };
  readonly #env: WitnessEnv;
  readonly #rng: Prng;
  driver: RaftDriver | undefined;
  owner = new SimOwner();
  incarnation = 0;
  up = false;
  /** Never lost: a witness's seeds damage no WAL (the fields server-cluster.ts reads of every member). */
  readonly lost = false;
  readonly walDamage = undefined;
  readonly server = undefined;
  /** Snapshots with data its log was asked to save (a witness holds no state: must stay 0). */
  snapshotsWithData = 0;
  /** The most entries its log held at a start (the tail some data voter may still need). */
  entriesMax = 0;
  /** Removed from the configuration (a conf change it applied). */
  removed = false;

  constructor(member: Member, env: WitnessEnv, rng: Prng) {
    this.member = member;
    this.#env = env;
    this.#rng = rng;
  }

  get id(): bigint {
    return this.member.id;
  }

  async start(): Promise<void> {
    const env = this.#env;
    const t = env.tuning;
    const disk = this.disk;
    const { owner, scheduler } = beginIncarnation(this, env.loop, disk.fs, () => env.syncDelayMs());
    const { wal, state: walState } = await Wal.open(walDir, simWalOptions(disk.fs, scheduler, owner, t, (error) => env.onFatal(this, error)));
    await bootstrapOnce(disk, wal, walState, env.members, env.witnessIds);
    this.entriesMax = Math.max(this.entriesMax, walState.entries.length);
    const raft = new RawNode(simRaftConfig(this.id, t, this.#rng), { hardState: walState.hardState, snapshot: walState.snapshot, entries: walState.entries, applied: walState.snapshot.index });
    const member = await buildWitnessMember({
      scheduler,
      wal: {
        save: (u) => wal.save(u),
        saveSnapshot: (snapshot) => {
          if (snapshot.data.byteLength > 0) this.snapshotsWithData++;
          return wal.saveSnapshot(snapshot);
        },
        releaseTo: (index) => wal.releaseTo(index),
      },
      network: () => simPeerLinks(this, owner, env),
    }, {
      raft,
      memberId: this.id,
      joinPeers: env.members.filter((m) => m.id !== this.id),
      heartbeatMs: t.heartbeatMs,
      logger: silentLogger(),
      onRemoved: () => {
        this.removed = true;
        env.trace(`n${this.id} (witness) removed`);
      },
      onFatal: (error) => owner.alive && env.onFatal(this, error),
    });
    if (!owner.alive) return;
    this.driver = member.driver;
    member.start();
    env.trace(`n${this.id} witness serving (incarnation ${this.incarnation}, log ${walState.snapshot.index}+${walState.entries.length})`);
  }

  /** Power off: every timer and pending write of this incarnation dies; the disk keeps only what was synced. */
  crash(): void {
    if (!this.up) return;
    this.owner.alive = false;
    this.up = false;
    this.driver = undefined;
    const loss = new Prng(Number(this.member.id % 0x7fffffffn) ^ (this.incarnation * 0x9e3779b1));
    const tear = (['none', 'prefix', 'sectors'] as const)[loss.int(3)]!;
    this.disk.fs = this.disk.fs.crashImage(tear, () => loss.int(1 << 30) / (1 << 30));
  }

  /** A witness answers no peer RPC (witness.ts's onRequest): data members are asked. */
  async handlePeerRequest(method: string): Promise<unknown> {
    throw new Error(`a witness serves no ${method} request: ask a data member`);
  }
}
