/**
 * Leader-side replication: what to send each follower (MsgApp / MsgSnap / MsgHeartbeat) given its progress,
 * and when an index is committed.
 */
import type { Raft } from './raft.js';
import { committedIndex } from './quorum.js';
import { EntryType, MessageType } from './types.js';
import type { Entry, NodeId } from './types.js';
import { dataDurableIndex, isWitness } from './witness.js';

/**
 * Send `to` what it lacks, if its progress allows. An empty MsgApp is sent only when `sendIfEmpty` or when
 * the follower has not been told the current commit index (so an idle follower still learns commits).
 * Returns true when a message was sent.
 */
export function maybeSendAppend(r: Raft, to: NodeId, sendIfEmpty: boolean): boolean {
  const pr = r.progress.get(to);
  if (pr === undefined || to === r.id || pr.isPaused()) return false;
  const log = r.log;
  const prevIndex = pr.next - 1;
  const prevTerm = log.term(prevIndex);
  const entries = prevTerm === undefined ? undefined : log.slice(pr.next, r.cfg.maxMsgBytes);
  if (prevTerm === undefined || entries === undefined) return sendSnapshot(r, to);
  if (entries.length === 0 && !sendIfEmpty && pr.sentCommit >= log.committed) return false;
  const m = r.newMessage(MessageType.App, to);
  m.index = prevIndex;
  m.logTerm = prevTerm;
  m.entries = entries;
  m.commit = log.committed;
  const n = entries.length;
  pr.sentEntries(n, n > 0 ? entries[n - 1]!.index : prevIndex);
  pr.sentCommit = Math.max(pr.sentCommit, log.committed);
  r.send(m);
  return true;
}

function sendSnapshot(r: Raft, to: NodeId): boolean {
  const pr = r.progress.get(to)!;
  // Only to a follower we recently heard from: a snapshot is large, do not send it into the void.
  if (!pr.recentActive) return false;
  // A witness has no state to send: a data voter that needs entries it dropped waits for a data leader.
  if (isWitness(r)) return false;
  const snap = r.log.snapshot;
  if (snap === undefined) {
    r.trace(`follower ${to} needs a snapshot but none is available (call compact after restart)`);
    return false;
  }
  const m = r.newMessage(MessageType.Snap, to);
  // A witness gets the snapshot's metadata only: it moves the start of its log and holds no state.
  m.snapshot = r.conf.isWitness(to) ? { meta: snap.meta, data: new Uint8Array(0) } : snap;
  pr.becomeSnapshot(snap.meta.index);
  r.trace(`sent snapshot at ${snap.meta.index} to ${to}`);
  r.send(m);
  return true;
}

/** Send MsgApps to every follower while their windows allow (streaming in replicate state). */
export function bcastAppend(r: Raft): void {
  for (const id of r.progress.keys()) {
    if (id === r.id) continue;
    sendAppendLoop(r, id);
  }
}

/** Keep sending to `to` while there are entries and the in-flight window is open. */
export function sendAppendLoop(r: Raft, to: NodeId): void {
  // Bounded: each pass sends a message that advances next or fills the window, which caps the count.
  for (let i = 0; i <= r.cfg.maxInflightMsgs; i++) {
    if (!maybeSendAppend(r, to, false)) return;
    const pr = r.progress.get(to);
    if (pr === undefined || pr.state !== 'replicate' || pr.next > r.log.lastIndex) return;
  }
}

export function bcastHeartbeat(r: Raft, context: Uint8Array | undefined): void {
  const toWitnesses = r.conf.witnesses.length > 0 && !isWitness(r) ? dataDurableIndex(r) : undefined;
  for (const [id, pr] of r.progress) {
    if (id === r.id) continue;
    const m = r.newMessage(MessageType.Heartbeat, id);
    // Never tell a follower a commit index beyond what it is known to hold.
    m.commit = Math.min(pr.match, r.log.committed);
    if (context !== undefined) m.context = context;
    if (toWitnesses !== undefined && r.conf.isWitness(id)) m.dataDurableIndex = toWitnesses;
    r.send(m);
  }
}

/**
 * Advance the commit index to what a majority of voters hold, but only by counting replicas of an entry of
 * the current term (Raft §5.4.2, figure 8); earlier entries are committed indirectly with it.
 */
export function maybeCommit(r: Raft): boolean {
  const mci = committedIndex(r.conf.voters, (id) => r.progress.get(id)?.match ?? 0, r.scratch);
  if (mci <= r.log.committed) return false;
  if (r.log.term(mci) !== r.term && !r.cfg.unsafeTestFaults?.commitEarlierTermByCount) return false;
  r.log.commitTo(mci);
  return true;
}

/** Leader append of new entries of its term; returns false (nothing appended) when over the byte cap. */
export function appendEntries(r: Raft, items: readonly { type: EntryType; data: Uint8Array }[], force: boolean): boolean {
  let bytes = 0;
  for (const it of items) bytes += it.data.byteLength;
  // The cap admits one proposal even when it alone exceeds it (etcd), so a big entry is not stuck forever.
  if (!force && r.uncommittedBytes > 0 && r.uncommittedBytes + bytes > r.cfg.maxUncommittedBytes) return false;
  r.uncommittedBytes += bytes;
  let index = r.log.lastIndex;
  for (const it of items) {
    const e: Entry = { term: r.term, index: ++index, type: it.type, data: it.data };
    r.log.append(e);
  }
  const self = r.progress.get(r.id);
  if (self !== undefined) self.next = index + 1;
  return true;
}
