/**
 * The leader's view of one follower (etcd-io/raft tracker.Progress).
 * - probe: we do not know where the follower's log matches ours; send one MsgApp per heartbeat round and wait.
 * - replicate: it matches up to `match`; stream MsgApps optimistically, at most `inflights.capacity` unacked.
 * - snapshot: it is behind our first index; a MsgSnap is on its way, send nothing until it lands or fails.
 */
import { assert } from '../base/assert.js';
import { Inflights } from './inflights.js';
import type { Progress as ProgressView, ProgressState } from './types.js';

export class Progress {
  match = 0;
  next: number;
  state: ProgressState = 'probe';
  isLearner: boolean;
  /** Heard from within the last election timeout (CheckQuorum, strict reconfig, snapshot sending). */
  recentActive = false;
  /** The leader tick at which we last heard from this follower. */
  lastActiveTick = Number.NEGATIVE_INFINITY;
  /** Probe state: a MsgApp was sent since the last response, wait for one before sending more. */
  probeSent = false;
  /** Snapshot state: the index of the snapshot in flight. */
  pendingSnapshot = 0;
  /** Replicate: heartbeat responses since the last ack that moved match (stall detection). */
  stalledHeartbeats = 0;
  /** The highest commit index we have told this follower (avoids empty MsgApps that say nothing new). */
  sentCommit = 0;
  readonly inflights: Inflights;

  constructor(next: number, isLearner: boolean, inflightMsgsMax: number) {
    this.next = next;
    this.isLearner = isLearner;
    this.inflights = new Inflights(inflightMsgsMax);
  }

  #reset(state: ProgressState): void {
    this.state = state;
    this.probeSent = false;
    this.pendingSnapshot = 0;
    this.stalledHeartbeats = 0;
    this.inflights.reset();
  }

  becomeProbe(): void {
    // After a snapshot, resume probing right after it (the follower has at least that much).
    if (this.state === 'snapshot') {
      const snapIndex = this.pendingSnapshot;
      this.#reset('probe');
      this.next = Math.max(this.match + 1, snapIndex + 1);
    } else {
      this.#reset('probe');
      this.next = this.match + 1;
    }
  }

  becomeReplicate(): void {
    this.#reset('replicate');
    this.next = this.match + 1;
  }

  becomeSnapshot(snapshotIndex: number): void {
    this.#reset('snapshot');
    this.pendingSnapshot = snapshotIndex;
  }

  /** An accepted MsgAppResp up to `index`; false when it tells us nothing new (stale or duplicate). */
  maybeUpdate(index: number): boolean {
    let updated = false;
    if (this.match < index) {
      this.match = index;
      updated = true;
      this.probeSent = false;
      this.stalledHeartbeats = 0;
    }
    this.next = Math.max(this.next, index + 1);
    return updated;
  }

  /**
   * A rejected MsgApp whose preceding index was `rejected`; `matchHint` is where the follower's log may
   * match. Returns false for stale rejections (already superseded). In replicate state a fresh rejection
   * (lost or reordered MsgApps) falls back to probing, from the hint rather than from match+1 (etcd-io/raft
   * probes from match+1 and leaves a TODO about the hint): a follower that merely saw messages out of order
   * then resumes right where it is instead of being resent everything since its last ack.
   */
  maybeDecrTo(rejected: number, matchHint: number): boolean {
    if (this.state === 'replicate') {
      if (rejected <= this.match) return false;
      this.becomeProbe();
      this.next = Math.max(this.match + 1, Math.min(rejected, matchHint + 1));
      return true;
    }
    if (this.next - 1 !== rejected) return false;
    this.next = Math.max(Math.min(rejected, matchHint + 1), this.match + 1);
    this.probeSent = false;
    return true;
  }

  /** Bookkeeping after sending a MsgApp carrying `count` entries ending at `lastIndex`. */
  sentEntries(count: number, lastIndex: number): void {
    if (this.state === 'replicate') {
      if (count > 0) {
        assert(lastIndex >= this.next, `progress: entries up to ${lastIndex} sent behind next ${this.next}`);
        this.next = lastIndex + 1;
        this.inflights.add(lastIndex);
      }
    } else if (this.state === 'probe') {
      this.probeSent = true;
    }
  }

  /** Whether sending another MsgApp must wait. */
  isPaused(): boolean {
    switch (this.state) {
      case 'probe':
        return this.probeSent;
      case 'replicate':
        return this.inflights.full();
      case 'snapshot':
        return true;
    }
  }

  view(): ProgressView {
    return {
      match: this.match,
      next: this.next,
      state: this.state,
      isLearner: this.isLearner,
      recentActive: this.recentActive,
      inflight: this.inflights.count,
    };
  }
}
