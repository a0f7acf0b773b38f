/**
 * The disk's room counted on the write path (issue 32, item 1): writes are admitted at their estimated disk
 * cost against the last statfs, a look is asked for after every diskRecheckBytes and on a refusal, and a
 * look that started before some admissions does not forget them.
 */
import { describe, expect, it } from 'vitest';
import { snapshotRefusalsAtOnceMax } from '../../../src/base/limits.js';
import { diskBytesPerRequest, diskBytesPerRequestByte, diskRecheckBytes, DiskRoom, snapshotRestoreBytesPerByte } from '../../../src/node/request/disk-room.js';

const MiB = 1024 * 1024;
const cost = (bytes: number): number => bytes * diskBytesPerRequestByte + diskBytesPerRequest;

function setup() {
  const room = new DiskRoom();
  let rechecks = 0;
  room.attach({ recheck: () => void rechecks++ });
  return { room, rechecks: () => rechecks };
}

describe('disk room', () => {
  it('admits everything before the first look', () => {
    const { room, rechecks } = setup();
    expect(room.admit(10 * MiB)).toBe(true);
    expect(rechecks()).toBe(0);
  });

  it('refuses a write that would eat into the reserve, and asks for a look', () => {
    const { room, rechecks } = setup();
    room.observed(10 * MiB, 9 * MiB, room.mark());
    const value = 64 * 1024;
    let admitted = 0;
    while (room.admit(value)) admitted++;
    expect(admitted).toBe(Math.floor(MiB / cost(value)));
    expect(rechecks()).toBeGreaterThanOrEqual(1);
    expect(room.takeRefused()).toBe(cost(value));
    expect(room.takeRefused()).toBe(0);
    // A fresh look that finds the space again admits again.
    room.observed(20 * MiB, 9 * MiB, room.mark());
    expect(room.admit(value)).toBe(true);
  });

  it('asks for a look after every diskRecheckBytes of applied entries, admitted here or not (a follower)', () => {
    const { room, rechecks } = setup();
    room.observed(1000 * MiB, 0, room.mark());
    const entry = 64 * 1024;
    const perLook = Math.ceil(diskRecheckBytes / (entry * diskBytesPerRequestByte));
    for (let i = 0; i < perLook - 1; i++) room.applied(entry);
    expect(rechecks()).toBe(0);
    room.applied(entry);
    expect(rechecks()).toBe(1);
    for (let i = 0; i < perLook; i++) room.applied(entry);
    expect(rechecks()).toBe(2);
    // An empty batch (conf changes only) asks for nothing.
    room.applied(0);
    expect(rechecks()).toBe(2);
  });

  it('forgets its look while NOSPACE refuses writes: the first write after a disarm is admitted and asks for a fresh look (issue 32)', () => {
    const { room, rechecks } = setup();
    room.observed(10 * MiB, 9 * MiB, room.mark());
    expect(room.admit(MiB)).toBe(false); // the look before the recovery freed space
    const before = rechecks();
    room.forget();
    expect(room.admit(MiB)).toBe(true);
    expect(rechecks()).toBe(before + 1);
    room.observed(10 * MiB, 9 * MiB, room.mark()); // the fresh look still finds no room: refused again
    expect(room.admit(MiB)).toBe(false);
  });

  it('asks for a look after every diskRecheckBytes of admitted cost', () => {
    const { room, rechecks } = setup();
    room.observed(1000 * MiB, 0, room.mark());
    const value = 64 * 1024;
    const perLook = Math.ceil(diskRecheckBytes / cost(value));
    for (let i = 0; i < perLook - 1; i++) room.admit(value);
    expect(rechecks()).toBe(0);
    room.admit(value);
    expect(rechecks()).toBe(1);
    room.observed(1000 * MiB, 0, room.mark());
    room.admit(value);
    expect(rechecks()).toBe(1);
  });

  it('a look keeps counting what was admitted after it started', () => {
    const { room } = setup();
    room.observed(10 * MiB, 0, room.mark());
    const mark = room.mark();
    for (let i = 0; i < 10; i++) expect(room.admit(MiB / 4)).toBe(true); // 7.5 MiB + overhead, admitted while the look runs
    room.observed(10 * MiB, 0, mark); // the look saw none of it
    expect(room.admit(MiB)).toBe(false);
  });

  describe('a snapshot from the leader (issue 32: free − 3·received + replaced must stay above the reserve)', () => {
    /** Chunks of `chunk` bytes admitted until a refusal (or `max`); returns the bytes admitted. */
    const receive = (room: DiskRoom, replaced: number, chunk: number, max: number): { bytes: number; refused: boolean } => {
      const r = room.receiveSnapshot(replaced);
      let bytes = 0;
      while (bytes < max) {
        if (!r.admit(chunk)) return { bytes, refused: true };
        bytes += chunk;
      }
      r.received();
      return { bytes, refused: false };
    };

    it('admits a snapshot whose file and restore fit above the reserve, the replaced backend counted as freed', () => {
      const { room } = setup();
      room.observed(42 * MiB, 4 * MiB, room.mark());
      // 3 × 12 MiB = 36 MiB ≤ 42 − 4: fits.
      expect(receive(room, 0, MiB, 12 * MiB)).toEqual({ bytes: 12 * MiB, refused: false });
      room.observed(42 * MiB, 4 * MiB, room.mark());
      // 3 × 14 = 42 > 38 without the old backend; with its 10 MiB freed by the restore's clear: 42 ≤ 48.
      expect(receive(room, 0, MiB, 14 * MiB).refused).toBe(true);
      room.observed(42 * MiB, 4 * MiB, room.mark());
      expect(receive(room, 10 * MiB, MiB, 14 * MiB).refused).toBe(false);
    });

    it('never counts the replaced backend below the file itself: the file lands before the old backend goes', () => {
      const { room } = setup();
      room.observed(20 * MiB, 4 * MiB, room.mark());
      // 3 × 23 − 100 would be negative; the file alone needs 23 MiB > 16.
      expect(receive(room, 100 * MiB, MiB, 23 * MiB)).toEqual({ bytes: 16 * MiB, refused: true });
    });

    it('refuses the chunk past the room (seed 2 of --fill-faults: 23 MB with 42 MB free), asks for a look, and keeps NOSPACE needed until one arrives', () => {
      const { room, rechecks } = setup();
      room.observed(42 * MiB, 4 * MiB, room.mark());
      const before = rechecks();
      const got = receive(room, 0, MiB, 23 * MiB);
      expect(got).toEqual({ bytes: 12 * MiB, refused: true }); // the 13th MiB would need 39 MiB > 38
      expect(rechecks()).toBeGreaterThan(before);
      const need = snapshotRestoreBytesPerByte * 13 * MiB;
      // Each look sees the need (it raises NOSPACE) until a snapshot arrives whole, not just the next one.
      expect(room.takeRefused()).toBe(need);
      expect(room.takeRefused()).toBe(need);
      room.observed(200 * MiB, 4 * MiB, room.mark());
      expect(receive(room, 0, MiB, 23 * MiB).refused).toBe(false);
      expect(room.takeRefused()).toBe(0);
    });

    it('refuses the leader\'s next sends at their first chunk after a refusal, until the count runs out or a look finds room', async () => {
      const { room } = setup();
      room.observed(42 * MiB, 4 * MiB, room.mark());
      expect(receive(room, 0, MiB, 23 * MiB).bytes).toBe(12 * MiB);
      for (let i = 0; i < snapshotRefusalsAtOnceMax; i++) expect(receive(room, 0, MiB, 23 * MiB)).toEqual({ bytes: 0, refused: true });
      // The count ran out: the next send is received as far as it fits again.
      room.observed(42 * MiB, 4 * MiB, room.mark()); // the look the refusal asked for (the partial file is gone)
      expect(receive(room, 0, MiB, 23 * MiB).bytes).toBe(12 * MiB);
      expect(receive(room, 0, MiB, 23 * MiB).bytes).toBe(0);
      // A look that finds room for what was refused (a recovery freed space) ends the refusals at once.
      room.observed(42 * MiB + snapshotRestoreBytesPerByte * 13 * MiB, 4 * MiB, room.mark());
      expect(receive(room, 0, MiB, 23 * MiB).refused).toBe(false);
    });

    it('drops a refused snapshot\'s need once entries are applied (a new leader sends the log instead)', () => {
      const { room } = setup();
      room.observed(10 * MiB, 4 * MiB, room.mark());
      expect(receive(room, 0, MiB, 23 * MiB).refused).toBe(true);
      expect(room.takeRefused()).toBeGreaterThan(0);
      room.applied(100);
      expect(room.takeRefused()).toBe(0);
    });

    it('counts the received file as written: a look that saw part of it does not count it twice', () => {
      const { room } = setup();
      room.observed(42 * MiB, 4 * MiB, room.mark());
      const r = room.receiveSnapshot(0);
      for (let i = 0; i < 6; i++) expect(r.admit(MiB)).toBe(true);
      // A look now sees the 6 MiB file on the disk: 36 MiB free.
      room.observed(36 * MiB, 4 * MiB, room.mark());
      // 12 MiB in all needs 36 MiB ≤ 38 above the reserve at the start: still admitted.
      for (let i = 0; i < 6; i++) expect(r.admit(MiB)).toBe(true);
      expect(r.admit(MiB)).toBe(false);
    });

    it('admits everything before the first look', () => {
      const { room } = setup();
      expect(receive(room, 0, MiB, 100 * MiB).refused).toBe(false);
    });
  });
});
