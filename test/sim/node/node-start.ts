/**
 * What every simulated member's start does, data (server-node.ts) or witness (witness-node.ts), before its
 * own production factory builds it: a new incarnation with its own owner (the last one's timers and pending
 * writes died with it), the WAL opened on the simulated disk, a new cluster's log written once, the Raft
 * configuration, and the links to the simulated network. Held once so the two kinds cannot drift apart.
 */
import type { Prng } from '../../../src/base/prng.js';
import type { Scheduler } from '../../../src/base/scheduler.js';
import type { Member } from '../../../src/node/server-api.js';
import type { PeerCall, PeerResults } from '../../../src/node/peer-rpc.js';
import { bootstrapEntries } from '../../../src/node/membership/new-cluster.js';
import { electionTicksOf } from '../../../src/node/etcd-server.js';
import type { HardState, Message, RaftConfig, Entry } from '../../../src/raft/types.js';
import { Wal, type WalOptions } from '../../../src/wal/wal.js';
import type { SimFs } from '../../wal/sim-fs.js';
import { SimOwner, type SimLoop } from './sim-loop.js';
import type { NodeTuning } from './server-node.js';

export const walDir = '/member/wal';
export const walTuning = { segmentBytes: 256 * 1024, preallocate: false, recycleSegmentsMax: 0 };

/** The fields of a simulated member a start renews. */
export interface Incarnation {
  owner: SimOwner;
  incarnation: number;
  up: boolean;
}

/** A new incarnation of `node`: its owner, its scheduler, and its disk's syncs taking the simulated delay. */
export function beginIncarnation(node: Incarnation, loop: SimLoop, fs: SimFs, syncDelayMs: () => number): { owner: SimOwner; scheduler: Scheduler } {
  const owner = (node.owner = new SimOwner());
  node.incarnation++;
  node.up = true;
  const scheduler = loop.scheduler(owner);
  fs.options.beforeSync = () => loop.sleep(syncDelayMs(), owner);
  return { owner, scheduler };
}

/** The WAL's options on the simulated disk: fatal errors count only while this incarnation lives. */
export function simWalOptions(fs: SimFs, scheduler: Scheduler, owner: SimOwner, t: NodeTuning, onFatal: (error: unknown) => void): WalOptions {
  return {
    fs,
    profile: 'ssd',
    tuning: { ...walTuning, commitDelayMs: t.walCommitDelayMs },
    timer: scheduler,
    onFatal: (error) => owner.alive && onFatal(error),
  };
}

/** A new cluster's log (main/member.ts's static bootstrap), written once, on the disk's first start. */
export async function bootstrapOnce(
  disk: { bootstrapped: boolean },
  wal: Wal,
  walState: { hardState: HardState; entries: Entry[] },
  members: Member[],
  witnessIds: bigint[],
): Promise<void> {
  if (disk.bootstrapped) return;
  const entries = bootstrapEntries(members, witnessIds);
  const hardState = { term: 1, vote: 0n, commit: entries.length };
  await wal.save({ hardState, entries });
  disk.bootstrapped = true;
  walState.hardState = hardState;
  walState.entries = entries;
}

/** Every simulated member's Raft configuration; `rng` is forked here, at the same point of every start. */
export function simRaftConfig(id: bigint, t: NodeTuning, rng: Prng): RaftConfig {
  return {
    id,
    electionTicks: electionTicksOf(t.electionMs, t.heartbeatMs),
    heartbeatTicks: 1,
    preVote: t.preVote,
    checkQuorum: true,
    maxMsgBytes: t.maxMsgBytes,
    maxInflightMsgs: t.maxInflightMsgs,
    maxUncommittedBytes: 1 << 30,
    rng: rng.fork(),
  };
}

/** Raft messages and peer RPCs over the simulated network; a dead incarnation sends nothing. */
export function simPeerLinks<N>(
  node: N,
  owner: SimOwner,
  env: { send(from: N, messages: Message[]): void; peerRequest(from: N, url: string, method: string, payload: unknown): Promise<unknown> },
): { send(messages: Message[]): void; request: PeerCall; syncPeers(): void } {
  return {
    send: (messages) => void (owner.alive && env.send(node, messages)),
    request: (url, method, payload) => env.peerRequest(node, url, method, payload) as Promise<PeerResults[typeof method]>,
    // The simulated network reaches every member by its URL: there is no dial list to keep.
    syncPeers: () => {},
  };
}
