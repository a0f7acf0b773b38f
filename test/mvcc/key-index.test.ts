import { describe, expect, it } from 'vitest';
import { Prng } from '../../src/base/prng.js';
import { compareBytes } from '../../src/base/bytes.js';
import { KeyIndex } from '../../src/mvcc/key-index.js';
import { codeIsTombstone, codeMain, revCode } from '../../src/mvcc/rev-code.js';
import { KeyTree } from '../../src/mvcc/key-tree.js';
import { bytesToRevision, revisionToBytes } from '../../src/mvcc/revision.js';
import { b } from './helpers.js';

function append(ki: KeyIndex, main: number, tombstone = false): void {
  ki.append(revCode(main, 0, tombstone), tombstone ? undefined : { createRevision: main, version: 1, lease: 0n });
}

/** The worked example in key-index.ts (etcd's key_index.go). */
function example(): KeyIndex {
  const ki = new KeyIndex(b('foo'));
  for (const [main, t] of [[1, false], [2, false], [3, false], [4, true], [5, false], [6, false], [7, true], [8, false]] as const) append(ki, main, t);
  return ki;
}

const mains = (ki: KeyIndex): string[] => ki.revs.map((c) => `${codeMain(c)}${codeIsTombstone(c) ? 't' : ''}`);

describe('KeyIndex', () => {
  it('gets the live revision at a point in time', () => {
    const ki = example();
    expect([0, 1, 3, 4, 5, 7, 8, 99].map((r) => { const c = ki.get(r); return c === undefined ? undefined : codeMain(c); })).toEqual([undefined, 1, 3, undefined, 5, undefined, 8, 8]);
  });

  it.each([
    [2, ['2', '3', '4t', '5', '6', '7t', '8']],
    [4, ['5', '6', '7t', '8']],
    [5, ['5', '6', '7t', '8']],
    [7, ['8']],
    [9, ['8']],
  ])('compact(%i) keeps the latest revision at or before it unless a tombstone', (rev, kept) => {
    const ki = example();
    ki.compact(rev);
    expect(mains(ki)).toEqual(kept);
  });

  it('empties when the last generation ended before the compaction', () => {
    const ki = new KeyIndex(b('foo'));
    append(ki, 2);
    append(ki, 3, true);
    expect(ki.compact(3).map(codeMain)).toEqual([2, 3]);
    expect(ki.isEmpty()).toBe(true);
  });

  it('refuses a tombstone on a deleted key and revisions going back', () => {
    const ki = new KeyIndex(b('foo'));
    expect(() => append(ki, 2, true)).toThrow();
    append(ki, 3);
    expect(() => append(ki, 3)).toThrow();
  });
});

describe('revision bytes', () => {
  it('encode as etcd (8-byte main, "_", 8-byte sub, optional "t") and sort in revision order', () => {
    expect([...revisionToBytes({ main: 258, sub: 1 })]).toEqual([0, 0, 0, 0, 0, 0, 1, 2, 0x5f, 0, 0, 0, 0, 0, 0, 0, 1]);
    expect(revisionToBytes({ main: 5, sub: 0 }, true)[17]).toBe(0x74);
    const big = { main: 2 ** 40 + 7, sub: 3 };
    expect(bytesToRevision(revisionToBytes(big, true))).toEqual({ rev: big, tombstone: true });
    expect(compareBytes(revisionToBytes({ main: 255, sub: 9 }), revisionToBytes({ main: 256, sub: 0 }))).toBeLessThan(0);
  });
});

describe('KeyTree', () => {
  it('stays ordered through random inserts and deletes and answers ranges', () => {
    const seed = 7;
    const rng = new Prng(seed);
    const tree = new KeyTree();
    const reference = new Set<string>();
    const hex = (n: number): string => n.toString(16).padStart(5, '0');
    for (let i = 0; i < 20_000; i++) {
      const k = hex(rng.int(5000));
      if (rng.next() < 0.7) {
        tree.getOrCreate(b(k));
        reference.add(k);
      } else {
        tree.delete(b(k));
        reference.delete(k);
      }
    }
    tree.checkInvariants();
    expect(tree.size, `seed ${seed}`).toBe(reference.size);
    const sorted = [...reference].sort();
    const got: string[] = [];
    tree.visit(b(hex(1000)), b(hex(1100)), (ki) => (got.push(new TextDecoder().decode(ki.key)), true));
    expect(got).toEqual(sorted.filter((k) => k >= hex(1000) && k < hex(1100)));
    const fromKey: string[] = [];
    tree.visit(b(hex(4990)), new Uint8Array(0), (ki) => (fromKey.push(new TextDecoder().decode(ki.key)), true));
    expect(fromKey).toEqual(sorted.filter((k) => k >= hex(4990)));
  });
});
