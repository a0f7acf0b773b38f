/**
 * A recorded client history: every operation's invocation and completion, stamped with one logical clock
 * shared by all clients (they live in one process, so the event loop's order IS a real-time order, with no
 * ties), plus every watch response received. The checkers read only this, so a history can be written by
 * hand in a unit test, or corrupted on purpose to prove a checker catches the corruption (L11).
 */

/** A key-value pair as the workload sees it: keys and values are ASCII strings. */
export interface Kv {
  key: string;
  value: string;
  modRev: number;
  createRev: number;
  version: number;
  /** Lease id in decimal, '0' when none. */
  lease: string;
}

export type OpInput =
  /** Txn(mod_revision(key) == cmpModRev → Put(value) | DeleteRange, else Range(key)). cmpModRev 0: create. */
  | { type: 'txn'; key: string; cmpModRev: number; action: 'put' | 'delete'; value: string }
  | { type: 'get'; key: string }
  /** Paginated list, later pages pinned to the first page's revision. */
  | { type: 'list'; prefix: string; limit: number }
  | { type: 'count'; prefix: string }
  /** Plain put attached to a lease (kube's events): never linearizability-checked, lease expiry deletes it. */
  | { type: 'leasePut'; key: string; value: string; lease: string }
  | { type: 'leaseGrant'; ttlSeconds: number }
  /** kube's compaction loop: Txn(version(compact_rev_key) == seenVersion → Put(rev), else Range), then Compact. */
  | { type: 'compact'; revision: number };

export type OpOutput =
  /** kv: the failure branch's Range result (null: key absent). rev: header revision. */
  | { type: 'txn'; succeeded: boolean; rev: number; kv?: Kv | null }
  | { type: 'get'; rev: number; kv: Kv | null }
  /** rev: the revision the list is pinned to (header revision of the first page); count: the first page's (the whole range). */
  | { type: 'list'; rev: number; kvs: Kv[]; count: number; pages: number; pageRevs: number[] }
  | { type: 'count'; rev: number; count: number }
  | { type: 'put'; rev: number }
  | { type: 'lease'; rev: number; id: string }
  | { type: 'compact'; rev: number }
  /** The call failed: for a write, it may or may not have happened. */
  | { type: 'error'; message: string };

export interface Op {
  id: number;
  /** The issuing client: each client runs one operation at a time. */
  client: number;
  input: OpInput;
  /** Logical time of the invocation. */
  call: number;
  /** Logical time of the completion; undefined while pending or when the call failed (unknown outcome). */
  ret?: number;
  output?: OpOutput;
}

export interface WatchEvent {
  type: 'put' | 'delete';
  kv: Kv;
  prevKv?: Kv;
}

export interface WatchResponseRec {
  /** Logical time of arrival. */
  at: number;
  /** Wall-clock time of arrival (ms), for lease timing. */
  atMs?: number;
  headerRev: number;
  events: WatchEvent[];
  /** A progress notification (no events, not created, not canceled), solicited or not. */
  progress: boolean;
  fragment: boolean;
}

/** One watch from creation to its end; a resumed watch is a new session. */
export interface WatchSession {
  id: number;
  client: number;
  member: string;
  /** Watched range [key, rangeEnd); rangeEnd '\0' = every key ≥ key. */
  key: string;
  rangeEnd: string;
  startRev: number;
  prevKv: boolean;
  /** List-then-watch (L6): the list op whose revision R this watch (starting at R+1) continues. */
  listOp?: number;
  /** A resumed watch: the session it continues (it starts after that one's last delivered revision). */
  resumes?: number;
  responses: WatchResponseRec[];
  /** Set when the server canceled the watch because its start revision was compacted. */
  compactRev?: number;
  end?: 'canceled' | 'error' | 'closed';
}

/** A lease kept alive by a client, with one key attached: its key must not be deleted while a renewal holds. */
export interface KeptLease {
  id: string;
  key: string;
  ttlSeconds: number;
  /** Acknowledged renewals (the grant included): when the request was sent (wall ms) and the TTL granted. */
  renewals: { sentMs: number; ttlSeconds: number }[];
}

export interface History {
  ops: Op[];
  watches: WatchSession[];
  leases?: KeptLease[];
}

export class Recorder {
  readonly ops: Op[] = [];
  readonly watches: WatchSession[] = [];
  readonly leases: KeptLease[] = [];
  #clock = 0;

  now(): number {
    return ++this.#clock;
  }

  invoke(client: number, input: OpInput): Op {
    const op: Op = { id: this.ops.length, client, input, call: this.now() };
    this.ops.push(op);
    return op;
  }

  complete(op: Op, output: OpOutput): void {
    op.ret = this.now();
    op.output = output;
  }

  /** A failed call: the outcome of a write is unknown, so it gets no return time. */
  fail(op: Op, err: unknown): void {
    op.output = { type: 'error', message: errorMessage(err) };
  }

  openWatch(s: Omit<WatchSession, 'id' | 'responses'>): WatchSession {
    const session: WatchSession = { ...s, id: this.watches.length, responses: [] };
    this.watches.push(session);
    return session;
  }

  history(): History {
    return { ops: this.ops, watches: this.watches, leases: this.leases };
  }
}

export function errorMessage(err: unknown): string {
  return err instanceof Error ? err.message : String(err);
}

/** True when `key` is inside the watched/listed range [from, end) (end '\0': unbounded, '': the one key). */
export function inRange(key: string, from: string, end: string): boolean {
  if (end === '') return key === from;
  if (end === '\0') return key >= from;
  return key >= from && key < end;
}

/** The range end that covers every key with `prefix` (ASCII prefixes only). */
export function prefixEnd(prefix: string): string {
  const last = prefix.charCodeAt(prefix.length - 1);
  return prefix.slice(0, -1) + String.fromCharCode(last + 1);
}

export function isWrite(input: OpInput): boolean {
  return input.type === 'txn' || input.type === 'leasePut' || input.type === 'compact' || input.type === 'leaseGrant';
}
