/**
 * The Raft core's vocabulary, shared with the durable log (src/wal), the simulator (test/sim) and the server.
 * Names follow the Raft paper and etcd-io/raft. Terms and indexes are safe integers; node ids are bigint
 * (etcd member ids are uint64). `0n` means "no node".
 *
 * This file is the contract between the core and everything that drives it. Change it only with care.
 */

export type NodeId = bigint;
export const noNode: NodeId = 0n;

export const EntryType = { Normal: 0, ConfChange: 1 } as const;
export type EntryType = (typeof EntryType)[keyof typeof EntryType];

/** A log entry. An empty `data` Normal entry is the no-op a new leader appends in its term. */
export interface Entry {
  term: number;
  index: number;
  type: EntryType;
  data: Uint8Array;
}

/** What must be durable before a vote or an append acknowledgement leaves the node. */
export interface HardState {
  term: number;
  vote: NodeId;
  commit: number;
}

export interface ConfState {
  voters: NodeId[];
  learners: NodeId[];
  /**
   * The voters that are witnesses (a subset of `voters`; absent when there are none). A witness persists
   * entries and hard state, acknowledges appends and votes like any voter, but never applies entries, keeps
   * only the log tail no data voter may still need, and leads only to hand its log to a data voter
   * (src/raft/witness.ts).
   */
  witnesses?: NodeId[];
}

export interface SnapshotMeta {
  index: number;
  term: number;
  confState: ConfState;
}

export interface Snapshot {
  meta: SnapshotMeta;
  /** The application's state at meta.index (opaque to Raft). */
  data: Uint8Array;
}

/**
 * Membership changes, one at a time (single-server changes, Ongaro 2014 §4.1).
 * - addVoter: add a new voter, or promote an existing learner (the leader refuses promotion of a learner that
 *   is not caught up, see ProposeError 'learnerNotCaughtUp').
 * - addLearner: add a non-voting member.
 * - addWitness: add a new voter that is a witness (src/raft/witness.ts). Turning a data voter into a witness
 *   or back is not supported (the leader refuses: 'memberExists').
 * - removeNode: remove a voter, a witness or a learner (the leader too: it steps down once the change is
 *   applied).
 */
export type ConfChangeType = 'addVoter' | 'addLearner' | 'addWitness' | 'removeNode';

export interface ConfChange {
  type: ConfChangeType;
  nodeId: NodeId;
  /** Opaque to Raft; the server stores the member's name and URLs here. */
  context: Uint8Array;
}

export const MessageType = {
  /** Follower → leader: a forwarded proposal. */
  Prop: 'MsgProp',
  App: 'MsgApp',
  AppResp: 'MsgAppResp',
  PreVote: 'MsgPreVote',
  PreVoteResp: 'MsgPreVoteResp',
  Vote: 'MsgVote',
  VoteResp: 'MsgVoteResp',
  Heartbeat: 'MsgHeartbeat',
  HeartbeatResp: 'MsgHeartbeatResp',
  Snap: 'MsgSnap',
  TimeoutNow: 'MsgTimeoutNow',
  /** Follower → leader: a forwarded ReadIndex request. */
  ReadIndex: 'MsgReadIndex',
  ReadIndexResp: 'MsgReadIndexResp',
  /** Follower → leader: a forwarded leader-transfer request. */
  TransferLeader: 'MsgTransferLeader',
} as const;
export type MessageType = (typeof MessageType)[keyof typeof MessageType];

/** One message between nodes. Fields a type does not use are zero / empty. */
export interface Message {
  type: MessageType;
  from: NodeId;
  to: NodeId;
  term: number;
  /** MsgApp: term of the entry at `index` (the entry preceding `entries`). */
  logTerm: number;
  /** MsgApp: index preceding `entries`; MsgAppResp: the follower's last matching index (or rejected index); votes: candidate's last index. */
  index: number;
  entries: Entry[];
  commit: number;
  reject: boolean;
  /** MsgAppResp with reject: the follower's hint for the next probe (its last index, or a conflict index). */
  rejectHint: number;
  /** MsgAppResp with reject: the term at rejectHint, for fast backtracking (etcd-io/raft #1440 style). */
  logTermHint?: number;
  snapshot?: Snapshot;
  /** MsgReadIndex / MsgReadIndexResp / heartbeats: the read request's context. */
  context?: Uint8Array;
  /**
   * MsgHeartbeat from a data leader to a witness: an index every data voter holds durably and that is
   * committed. The witness may drop its entries up to it (src/raft/witness.ts).
   */
  dataDurableIndex?: number;
}

export type Role = 'follower' | 'preCandidate' | 'candidate' | 'leader';

export interface SoftState {
  leader: NodeId;
  role: Role;
}

/** A ReadIndex answer: once the applied index reaches `index`, reads for `context` are linearizable. */
export interface ReadState {
  index: number;
  context: Uint8Array;
}

/**
 * Everything the driver must do, handed out by RawNode.ready(). A Ready is "accepted" when it is handed out:
 * the next Ready holds only newer work, so the driver may call ready() again while this one is still being
 * persisted (disk never stalls the protocol). The driver must:
 * 1. send `messages` at once (they depend on nothing unpersisted);
 * 2. persist `hardState`, `snapshot` and `entries` (in the order of Readies; `entries` may begin at an index
 *    that overwrites a previously persisted suffix, which the log must then truncate);
 * 3. when that is durable, send `messagesAfterPersist` and call `RawNode.onPersisted(persistedUpTo)`
 *    (and, if there was a snapshot, it is included in that acknowledgement);
 * 4. apply `committedEntries` in order, calling `applyConfChange` for conf-change entries, then call
 *    `RawNode.onApplied(lastAppliedIndex)`. Committed entries are handed out only once they are durable
 *    locally too (acknowledged by onPersisted), so the state machine is never ahead of its own log; with
 *    `applyUnstable` as soon as they are committed, and the driver persists applied state only up to
 *    `RawNode.stableIndex`.
 */
export interface Ready {
  /** Present when the leader or role changed since the last Ready. */
  softState?: SoftState;
  /** Present when term, vote or commit changed. */
  hardState?: HardState;
  /**
   * Present when a snapshot must be persisted and restored by the application. On a witness its data is
   * empty: it moves the start of the log (persist the metadata, restore nothing).
   */
  snapshot?: Snapshot;
  /**
   * Witness only: its log now starts after `releaseLog.index` (entries every data voter holds durably). Persist
   * the metadata as the log's start, after this Ready's writes, and drop the entries it covers. There is no
   * state to save: a witness has none.
   */
  releaseLog?: SnapshotMeta;
  entries: Entry[];
  committedEntries: Entry[];
  messages: Message[];
  messagesAfterPersist: Message[];
  readStates: ReadState[];
  /** The acknowledgement to pass to onPersisted once hardState/snapshot/entries of this Ready are durable. */
  persistedUpTo: PersistAck;
  /** False when nothing in this Ready needs an fsync (only commit index moved, or nothing at all). */
  mustSync: boolean;
}

/** "The log is stable up to index `index` of term `term`" (and the hard state of this Ready is durable). */
export interface PersistAck {
  index: number;
  term: number;
  /** Monotonic sequence of the Ready this acknowledges; the core ignores stale or out-of-order acks. */
  readySeq: number;
}

export type ProgressState = 'probe' | 'replicate' | 'snapshot';

export interface Progress {
  match: number;
  next: number;
  state: ProgressState;
  isLearner: boolean;
  recentActive: boolean;
  inflight: number;
}

export interface Status {
  id: NodeId;
  term: number;
  vote: NodeId;
  commit: number;
  applied: number;
  /** The first index the log holds (those before it are in a snapshot or, on a witness, released). */
  firstIndex: number;
  lastIndex: number;
  leader: NodeId;
  role: Role;
  confState: ConfState;
  leadTransferee: NodeId;
  /** Only on the leader. */
  progress?: Map<NodeId, Progress>;
}

/** Expected refusals of propose / proposeConfChange / transferLeader. Programmer errors are assertions. */
export type ProposeError =
  | 'noLeader'
  | 'proposalDropped' // leader transferring, uncommitted-size limit, or not leader and forwarding impossible
  | 'notLeader' // conf changes and promotions must be proposed on the leader
  | 'confChangePending' // one membership change at a time
  | 'leaderNotCommittedInTerm' // no change before the new leader committed an entry of its term
  | 'learnerNotCaughtUp'
  | 'memberNotFound'
  | 'memberExists'
  | 'notLearner'
  | 'wouldLoseQuorum' // removing/adding would leave too few active voters (etcd's strict reconfig check)
  | 'noDataVoter'; // the change would leave only witnesses among the voters (nobody could ever lead)

export type ProposeResult = { ok: true } | { ok: false; error: ProposeError };

export interface RaftConfig {
  id: NodeId;
  /** Ticks without hearing from a leader before a follower campaigns: randomized in [electionTicks, 2*electionTicks). */
  electionTicks: number;
  heartbeatTicks: number;
  preVote: boolean;
  checkQuorum: boolean;
  /** Bytes of entries per MsgApp. */
  maxMsgBytes: number;
  /** MsgApps in flight per follower in replicate state. */
  maxInflightMsgs: number;
  /** Bytes of uncommitted entries the leader accepts before dropping proposals. */
  maxUncommittedBytes: number;
  /** Injected randomness (election timeouts). */
  rng: { int(n: number): number };
  /** Optional logger for interesting transitions; must not affect behaviour. */
  logger?: (line: string) => void;
  /**
   * Hand committed entries out for applying before they are durable locally (default false: only once
   * committed and acknowledged by onPersisted). A committed entry is durable on a quorum, so applying it
   * early is safe for the cluster, and a leader's slow disk then delays no reply its followers made durable
   * (etcd's raftNode applies in parallel with its own WAL write). The driver then owns one rule: applied
   * state may be persisted only up to stableIndex (else a crash leaves it ahead of the log).
   */
  applyUnstable?: boolean;
  /**
   * Test-only faults that break the core on purpose, so the simulator can prove its checkers catch them.
   * Never set outside tests.
   */
  unsafeTestFaults?: {
    /** Send vote grants in `messages` instead of `messagesAfterPersist`. */
    voteBeforePersist?: boolean;
    /** Commit entries of earlier terms by counting replicas (violates paper figure 8). */
    commitEarlierTermByCount?: boolean;
    /** Let learners vote and campaign. */
    learnersVote?: boolean;
    /** Witnesses never drop their log (src/raft/witness.ts), so it grows without bound. */
    witnessNeverReleases?: boolean;
  };
}

/** What a node restarts from: its durable state as read back from the log. */
export interface RaftBootstrap {
  hardState: HardState;
  /** The latest durable snapshot's metadata (index 0 when none). */
  snapshot: SnapshotMeta;
  /** Entries after snapshot.index, contiguous. */
  entries: Entry[];
  /** The configuration for a brand-new node (used only when log and snapshot are empty). */
  initialConfState?: ConfState;
  /** Index applied by the application already (after a restart, the state machine's consistent index). */
  applied: number;
}
