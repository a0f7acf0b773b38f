/**
 * Room on the disk for a write, judged on the write path (issue 32, item 1). The disk watch's statfs once a
 * second was too slow: the fastest writer (64 KiB puts back to back) filled a 64 MiB disk in ~1.9 s, past
 * the reserve between two looks. So every admitted write is counted at what it may cost the disk
 * (diskBytesPerRequestByte: the log's copy, LevelDB's log and its table), free space is re-read (statfs)
 * after every diskRecheckBytes of such writes, and a write that would eat into the reserve is refused before
 * it is proposed, with etcd's "database space exceeded", while the watch raises NOSPACE. The estimate
 * errs high: a refusal re-reads the disk, so an over-count costs one statfs, never a wrong refusal for long.
 *
 * The host (main/disk-watch.ts) does the statfs and reports what it saw (observed); this side only counts.
 * Not deterministic, and not in the apply path: it decides what is proposed, as etcd's quota check does.
 */

/** Disk bytes a write may cost per byte of its keys and values: the log's record, LevelDB's log and its level-0 table. */
export const diskBytesPerRequestByte = 3;
/** A request's own overhead on disk (record headers, revision keys, index), whatever its size. */
export const diskBytesPerRequest = 512;
import { snapshotRefusalsAtOnceMax } from '../../base/limits.js';

/** Estimated bytes written after which free space is read again. */
export const diskRecheckBytes = 1024 * 1024;
/**
 * Disk bytes a snapshot from the leader needs at peak per byte of it: its received file (S) and LevelDB's
 * restore of it (2·S: measured on tmpfs by scripts/measure-restore-peak.ts), before the file is deleted.
 */
export const snapshotRestoreBytesPerByte = 3;

/** One snapshot from the leader as it arrives (DiskRoom.receiveSnapshot). */
export interface SnapshotAdmission {
  /** Whether the next chunk of `bytes` may be written: its restore still fits above the reserve; counts it when it does. */
  admit(bytes: number): boolean;
  /** The snapshot arrived whole: an earlier refusal's need is dropped. */
  received(): void;
}

export interface DiskRoomHost {
  /** Reads free space now (statfs) and calls observed(); may raise NOSPACE. One at a time. */
  recheck(): void;
}

export class DiskRoom {
  #host: DiskRoomHost | undefined;
  /** Free bytes (the lowest of the watched file systems) at the last look, and the reserve then. */
  #free: number | undefined;
  #reserve = 0;
  /** Estimated bytes admitted since the look that #free comes from started. */
  #admitted = 0;
  /** Estimated bytes admitted in all (a look subtracts what was admitted before it started). */
  #admittedTotal = 0;
  /** The largest cost refused since the last look: a look that still finds no room for it raises NOSPACE. */
  #refused = 0;
  /** The last look was dropped (forget()) and no look has come since. */
  #forgotten = false;
  /** Estimated disk bytes of entries applied since the last look asked for by applied(). */
  #applied = 0;
  /**
   * The room the last refused snapshot needs (0 when none or once one arrived): kept across looks, so the
   * NOSPACE it raised stays up while the follower cannot take its leader's data, rather than flapping between
   * a look that clears it and the leader's next send.
   */
  #snapshotNeed = 0;
  /** The backend the refused snapshot would have replaced (its bytes count as freed in #snapshotNeed). */
  #snapshotReplaced = 0;
  /** Sends of the leader still to refuse at their first chunk after a refusal (snapshotRefusalsAtOnceMax). */
  #refuseAtOnce = 0;

  /** Connects the watch that reads the disk (the server exists before the watch). */
  attach(host: DiskRoomHost): void {
    this.#host = host;
  }

  /** Where a look starts: the bytes admitted so far (pass back to observed()). */
  mark(): number {
    return this.#admittedTotal;
  }

  /**
   * The room a look must find above the reserve not to raise NOSPACE: that of the largest write refused since
   * the last look (0 when none), so that a refusal here always ends as an alarm an operator can see.
   */
  takeRefused(): number {
    const r = Math.max(this.#refused, this.#snapshotNeed);
    this.#refused = 0;
    return r;
  }

  /** A look at the disk that started at `mark` saw `freeBytes` free with `reserveBytes` to keep. */
  observed(freeBytes: number, reserveBytes: number, mark: number): void {
    this.#free = freeBytes;
    this.#forgotten = false;
    this.#reserve = reserveBytes;
    // What was admitted after the look started may not be on the disk it saw.
    this.#admitted = this.#admittedTotal - mark;
  }

  /**
   * Entries of `bytes` were applied here, wherever they were proposed: a look after every diskRecheckBytes
   * of them. A follower admits none of the writes that fill its disk (they reach it through the log), so
   * without this it looked only once a second and could meet ENOSPC between two looks; with it, its NOSPACE
   * is raised through Raft in time and protects it as the leader's protects the leader (issue 32).
   */
  applied(bytes: number): void {
    // Entries applied: this member is not stuck behind a snapshot it refused (a new leader may send it the log).
    this.#snapshotNeed = 0;
    this.#refuseAtOnce = 0;
    this.#applied += bytes * diskBytesPerRequestByte;
    if (this.#applied < diskRecheckBytes) return;
    this.#applied = 0;
    this.#host?.recheck();
  }

  /**
   * Drops the last look (while NOSPACE refuses writes before they reach here): the recovery that ends in a
   * disarm (deletes, compaction, defrag) frees space no look has seen yet, and the first write after the
   * disarm was refused by the free bytes seen before it (issue 32). The next write asks for a fresh look.
   */
  forget(): void {
    this.#free = undefined;
    this.#forgotten = true;
  }

  /** Whether a write of `bytes` (keys and values) fits above the reserve; counts it when it does. */
  admit(bytes: number): boolean {
    const free = this.#seenFree();
    if (free === undefined) return true;
    const cost = bytes * diskBytesPerRequestByte + diskBytesPerRequest;
    if (free - this.#admitted - cost < this.#reserve) {
      this.#refused = Math.max(this.#refused, cost);
      this.#host?.recheck();
      return false;
    }
    this.#count(cost);
    return true;
  }

  /**
   * A snapshot from the leader, replacing a backend of `replacedBytes` (freed by the restore's clear): each
   * chunk is admitted only while free − received − max(0, 2·received − replaced) stays above the reserve
   * (free as of now: the file's chunks count as admitted bytes until a look sees them). A refusal asks for a look, which raises
   * NOSPACE; the receiver answers the leader with an error and the leader sends again later, while the
   * follower stays behind and alive (issue 32: a follower of a full cluster met ENOSPC restoring its snapshot).
   * The leader's next snapshotRefusalsAtOnceMax sends are refused at their first chunk, unless a look finds
   * room for the refused one by then: each full try would write a third of the free space for nothing.
   */
  receiveSnapshot(replacedBytes: number): SnapshotAdmission {
    // Refused a moment ago, and the disk has no more room for it since (a recovery would free some): refused
    // again before a byte is written, until the count runs out.
    const roomSinceRefusal = this.#free === undefined ? Infinity : this.#free - this.#admitted - this.#reserve + Math.max(0, replacedBytes - this.#snapshotReplaced);
    if (this.#refuseAtOnce > 0 && roomSinceRefusal < this.#snapshotNeed) {
      this.#refuseAtOnce--;
      return { admit: () => false, received: () => {} };
    }
    let received = 0;
    return {
      admit: (bytes) => {
        received += bytes;
        const free = this.#seenFree();
        if (free === undefined) return true;
        // The file's bytes so far are on the disk (seen by a look, or counted in #admitted); the restore's 2·S
        // is to come, less the backend it replaces, but never less than nothing: the file is written before the
        // old backend goes (a large old backend once made the need come out below the file's own size).
        const restoreBytes = Math.max(0, (snapshotRestoreBytesPerByte - 1) * received - replacedBytes);
        if (free - this.#admitted - bytes - restoreBytes < this.#reserve) {
          this.#snapshotNeed = received + restoreBytes;
          this.#snapshotReplaced = replacedBytes;
          this.#refuseAtOnce = snapshotRefusalsAtOnceMax;
          this.#host?.recheck();
          return false;
        }
        this.#count(bytes);
        return true;
      },
      received: () => {
        this.#snapshotNeed = 0;
        this.#refuseAtOnce = 0;
      },
    };
  }

  /**
   * Free bytes at the last look, or undefined when there is none: nothing seen yet (admitted: the watch looks
   * at once when it starts) or the look was forgotten (admitted, and a fresh look asked for).
   */
  #seenFree(): number | undefined {
    if (this.#free === undefined && this.#forgotten) this.#host?.recheck();
    return this.#free;
  }

  /** Admitted `bytes` of estimated disk writes: a look once diskRecheckBytes of them piled up since the last. */
  #count(bytes: number): void {
    this.#admitted += bytes;
    this.#admittedTotal += bytes;
    if (this.#admitted >= diskRecheckBytes) this.#host?.recheck();
  }
}
