/**
 * The disk's room counted on the write path (issue 32, item 1): writes are admitted at their estimated disk
 * cost against the last statfs, a look is asked for after every diskRecheckBytes and on a refusal, and a
 * look that started before some admissions does not forget them.
 */
import { describe, expect, it } from 'vitest';
import { diskBytesPerRequest, diskBytesPerRequestByte, diskRecheckBytes, DiskRoom } from '../../../src/node/request/disk-room.js';

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
});
