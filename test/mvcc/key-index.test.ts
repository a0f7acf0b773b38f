import { describe, expect, it } from 'vitest';
import { Prng } from '../../src/base/prng.js';
import { compareBytes } from '../../src/base/bytes.js';
import { KeyIndex } from '../../src/mvcc/key-index.js';
import { codeIsTombstone, codeMain, revCode } from '../../src/mvcc/rev-code.js';
import { KeyTree } from '../../src/mvcc/key-tree.js';
import { keyText, keyTextBytes } from '../../src/mvcc/key-text.js';
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

  it('keeps one revision as a bare code and goes between one and many through appends and compactions', () => {
    const ki = new KeyIndex(b('foo'));
    append(ki, 2);
    expect([ki.revisionCount, mains(ki), ki.get(2) === undefined, ki.has(revCode(2, 0, false))]).toEqual([1, ['2'], false, true]);
    expect(ki.before(revCode(2, 0, false))).toBeUndefined();
    append(ki, 3);
    append(ki, 4);
    expect(mains(ki)).toEqual(['2', '3', '4']);
    expect(ki.compact(3).map(codeMain)).toEqual([2]);
    expect(ki.compact(4).map(codeMain)).toEqual([3]);
    expect([ki.revisionCount, mains(ki), ki.modRevision]).toEqual([1, ['4'], 4]);
    append(ki, 5, true);
    expect(ki.compact(5).map(codeMain)).toEqual([4, 5]);
    expect(ki.isEmpty()).toBe(true);
    append(ki, 6);
    expect(mains(ki)).toEqual(['6']);
  });

  it('hands out its key as fresh owned bytes', () => {
    const key = new Uint8Array(64).fill(0xfe).subarray(8, 12);
    const ki = new KeyIndex(key);
    const [a, c] = [ki.key, ki.key];
    expect([a !== c, [...a], a.buffer.byteLength]).toEqual([true, [0xfe, 0xfe, 0xfe, 0xfe], 4]);
  });

  it('refuses a tombstone on a deleted key and revisions going back', () => {
    const ki = new KeyIndex(b('foo'));
    expect(() => append(ki, 2, true)).toThrow();
    append(ki, 3);
    expect(() => append(ki, 3)).toThrow();
  });
});

describe('key text', () => {
  it('round-trips every byte and keys longer than one fromCharCode call, as flat text', () => {
    const all = Uint8Array.from({ length: 256 }, (_, i) => i);
    expect([...keyTextBytes(keyText(all))]).toEqual([...all]);
    const long = Uint8Array.from({ length: 10_000 }, (_, i) => (i * 7) & 0xff);
    expect(keyText(long).length).toBe(10_000);
    expect(keyTextBytes(keyText(long))).toEqual(long);
  });

  it('orders text exactly as unsigned bytes, prefixes first (seeded)', () => {
    const seed = 11;
    const rng = new Prng(seed);
    for (let i = 0; i < 2000; i++) {
      const pick = (): Uint8Array => Uint8Array.from({ length: rng.int(4) }, () => [0, 0x7f, 0x80, 0xff, rng.int(256)][rng.int(5)]!);
      const [x, y] = [pick(), pick()];
      const [tx, ty] = [keyText(x), keyText(y)];
      expect(Math.sign(tx < ty ? -1 : tx > ty ? 1 : 0), `seed ${seed}: ${x} vs ${y}`).toBe(Math.sign(compareBytes(x, y)));
    }
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

  it('orders binary keys (0x00, 0x80, 0xff bytes) as unsigned bytes (seeded)', () => {
    const seed = 5;
    const rng = new Prng(seed);
    const tree = new KeyTree();
    const keys = new Map<string, Uint8Array>();
    for (let i = 0; i < 3000; i++) {
      const k = Uint8Array.from({ length: 1 + rng.int(3) }, () => [0, 0x7f, 0x80, 0xff, rng.int(256)][rng.int(5)]!);
      tree.getOrCreate(k);
      keys.set(k.join(','), k);
    }
    tree.checkInvariants();
    const expected = [...keys.values()].sort(compareBytes).map((k) => k.join(','));
    expect([...tree.all()].map((ki) => ki.key.join(',')), `seed ${seed}`).toEqual(expected);
    const from = Uint8Array.of(0x80);
    const got: string[] = [];
    tree.visit(from, Uint8Array.of(0xff, 0), (ki) => (got.push(ki.key.join(',')), true));
    expect(got).toEqual([...keys.values()].filter((k) => compareBytes(k, from) >= 0 && compareBytes(k, Uint8Array.of(0xff, 0)) < 0).sort(compareBytes).map((k) => k.join(',')));
  });
});
