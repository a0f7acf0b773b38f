/**
 * Turning one batch of saves into the records of one write: what is written so far (the hard state, the
 * snapshot metadata and the last index, which a new segment starts with), and the deferred commit-only hard
 * state that rides along with the next batch.
 */
import type { HardState, SnapshotMeta } from '../raft/types.js';
import { BatchEncoder } from './record.js';
import type { PendingSave } from './save-queue.js';

export class BatchEncoding {
  readonly #encoder = new BatchEncoder();
  #writtenHardState: HardState | undefined;
  #writtenSnapshot: SnapshotMeta;
  #writtenLast: number;
  /** A commit-only hard state saved with sync: false, written with the next batch unless a newer one is. */
  #deferred: { hardState: HardState; seq: number } | undefined;

  constructor(recovered: { hardState: HardState; snapshot: SnapshotMeta; last: number }) {
    this.#writtenHardState = recovered.hardState;
    this.#writtenSnapshot = recovered.snapshot;
    this.#writtenLast = recovered.last;
  }

  /** The last index encoded: a segment rotated now starts after it. */
  get writtenLast(): number {
    return this.#writtenLast;
  }

  defer(hardState: HardState, seq: number): void {
    this.#deferred = { hardState, seq };
  }

  /** The batch's bytes and records; a new segment (`rotated`) starts with the state written so far. */
  encode(batch: PendingSave[], header: { batchSeq: number; salt: number; rotated: boolean }): { bytes: Uint8Array; records: number; maxIndex: number } {
    const enc = this.#encoder;
    enc.begin(header.batchSeq, header.salt);
    if (header.rotated) {
      if (this.#writtenHardState) enc.hardState(this.#writtenHardState);
      if (this.#writtenSnapshot.index > 0) enc.snapshotMeta(this.#writtenSnapshot);
    }
    let maxIndex = 0;
    let lastHardStateSeq = 0;
    for (const { request: r, seq } of batch) {
      if (r.snapshotMeta) {
        enc.snapshotMeta(r.snapshotMeta);
        this.#writtenSnapshot = r.snapshotMeta;
        this.#writtenLast = Math.max(this.#writtenLast, r.snapshotMeta.index);
      }
      if (r.entries && r.entries.length > 0) {
        enc.entries(r.entries);
        this.#writtenLast = r.entries[r.entries.length - 1]!.index;
        maxIndex = Math.max(maxIndex, this.#writtenLast);
      }
      if (r.hardState) {
        enc.hardState(r.hardState);
        this.#writtenHardState = r.hardState;
        lastHardStateSeq = seq;
      }
    }
    // A deferred commit-only hard state goes last, unless a newer hard state in this batch supersedes it.
    const deferred = this.#deferred;
    if (deferred !== undefined) {
      if (deferred.seq > lastHardStateSeq) {
        enc.hardState(deferred.hardState);
        this.#writtenHardState = deferred.hardState;
      }
      this.#deferred = undefined;
    }
    if (enc.records === 0) enc.hardState(this.#writtenHardState ?? { term: 0, vote: 0n, commit: 0 });
    const records = enc.records;
    return { bytes: enc.finish(), records, maxIndex };
  }
}
