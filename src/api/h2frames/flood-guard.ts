/**
 * What a connection counts against clients that make us work for nothing: the protections nghttp2 gave
 * node:http2 (its stream-reset rate limit, Node's maxSessionRejectedStreams and maxSessionInvalidFrames) that our
 * own frames must give themselves. Both are counted in streams and frames, never in time: no timers, nothing
 * to schedule, the same answer for the same frames.
 *
 * StreamResetWindow, against rapid reset (CVE-2023-44487): a stream reset by the client before we answered
 * frees its concurrency slot at once while its call may still be working (a Put already proposed), so
 * SETTINGS_MAX_CONCURRENT_STREAMS alone does not bound the work. Streams we refuse (over the concurrency
 * limit, after GOAWAY, malformed) count too: each costs a decode and an answer. Streams are counted in epochs
 * of `epochStreams` opened; the resets of streams opened in this epoch and the one before are added up, and
 * more than `resetsMax` of them is too many. A stream opened before both epochs (a Watch open for hours) is
 * not counted when it is reset: cancelling long calls is what clients do.
 * Worked example, epochStreams 4, resetsMax 5: streams 1..7 opened, 1, 3, 5 reset (epoch A: 1..7 opened
 * 4 streams, 3 resets); 9 opens epoch B (previous: A); 9, 11, 13 reset → 3 + 3 = 6 > 5: too many. Had 1, 3, 5
 * been reset after 17 opened epoch C, they would not count (A is gone).
 * A client that resets a fraction r of its streams is cut once r·(between 1 and 2 epochs) passes resetsMax, so
 * sustained, past resetsMax / (2·epochStreams); a burst of up to resetsMax resets (every call of a busy client
 * hitting its deadline at once, when the leader is lost) passes.
 *
 * IdleFrameBudget (CVE-2019-9518's empty frames, CVE-2024-27316's endless CONTINUATION): frames that do no work
 * (empty DATA, PRIORITY, unknown types, frames for streams that are gone, repeated SETTINGS) cost us a little
 * each and the client nothing; a connection may spend `framesMax` of them, and each stream opened or answered
 * gives `refundFrames` back (never past framesMax). Only a client that sends mostly such frames runs out.
 */
import { assert } from '../../base/assert.js';

export class StreamResetWindow {
  readonly #epochStreams: number;
  readonly #resetsMax: number;
  /** The lowest stream id opened in the current epoch, and in the one before (0: from the start). */
  #currentFirstId = 0;
  #previousFirstId = 0;
  #currentOpened = 0;
  #currentResets = 0;
  #highestId = 0;
  #previousResets = 0;

  constructor(epochStreams: number, resetsMax: number) {
    assert(Number.isSafeInteger(epochStreams) && epochStreams > 0, 'StreamResetWindow: epochStreams must be a positive integer');
    assert(Number.isSafeInteger(resetsMax) && resetsMax > 0, 'StreamResetWindow: resetsMax must be a positive integer');
    this.#epochStreams = epochStreams;
    this.#resetsMax = resetsMax;
  }

  /** Stream `streamId` was opened (ids rise: the connection refuses any other). */
  opened(streamId: number): void {
    assert(streamId > this.#highestId, 'StreamResetWindow: stream ids must rise');
    this.#highestId = streamId;
    this.#count(streamId);
  }

  /** The client reset stream `streamId` before we answered it; true when that is one too many. */
  reset(streamId: number): boolean {
    if (streamId >= this.#currentFirstId) this.#currentResets++;
    else if (streamId >= this.#previousFirstId) this.#previousResets++;
    else return false;
    return this.#over();
  }

  /**
   * We refused a stream: opened and reset at once. Counted in the current epoch whatever its id (after GOAWAY
   * the ids of refused streams need not rise).
   */
  refused(): boolean {
    this.#count(this.#highestId + 1);
    this.#currentResets++;
    return this.#over();
  }

  /** One more stream in the current epoch; the first past a full epoch (id `firstId` or above) starts the next. */
  #count(firstId: number): void {
    if (this.#currentOpened === this.#epochStreams) {
      this.#previousFirstId = this.#currentFirstId;
      this.#previousResets = this.#currentResets;
      this.#currentFirstId = firstId;
      this.#currentOpened = 0;
      this.#currentResets = 0;
    }
    this.#currentOpened++;
  }

  #over(): boolean {
    return this.#currentResets + this.#previousResets > this.#resetsMax;
  }
}

export class IdleFrameBudget {
  readonly #framesMax: number;
  readonly #refundFrames: number;
  #spent = 0;

  constructor(framesMax: number, refundFrames: number) {
    assert(Number.isSafeInteger(framesMax) && framesMax > 0, 'IdleFrameBudget: framesMax must be a positive integer');
    assert(Number.isSafeInteger(refundFrames) && refundFrames > 0 && refundFrames <= framesMax, 'IdleFrameBudget: refundFrames must be in 1..framesMax');
    this.#framesMax = framesMax;
    this.#refundFrames = refundFrames;
  }

  /** A frame that did no work; false when the budget is spent. */
  spend(): boolean {
    this.#spent++;
    return this.#spent <= this.#framesMax;
  }

  /** A stream was opened or answered. */
  refund(): void {
    this.#spent = Math.max(0, this.#spent - this.#refundFrames);
  }
}
