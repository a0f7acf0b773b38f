/** CRC-32C, record framing and payload codecs, snapshot files, metrics histogram. */
import { describe, expect, it } from 'vitest';
import { Prng } from '../../src/base/prng.js';
import { crc32c } from '../../src/wal/crc32c.js';
import { Histogram, syncSecondsBounds } from '../../src/wal/metrics.js';
import { BatchEncoder, decodeEntries, decodeHardState, decodeSnapshotMeta, readFrame, RecordType } from '../../src/wal/record.js';
import { unpack } from 'msgpackr';
import type { SnapshotMeta } from '../../src/raft/types.js';
import { decodeSnapshotFile, encodeSnapshotFile } from '../../src/wal/snapshot-file.js';

/** Bitwise reference implementation to check the table-driven one against. */
function crcReference(data: Uint8Array): number {
  let c = 0xffffffff;
  for (const b of data) {
    c ^= b;
    for (let k = 0; k < 8; k++) c = c & 1 ? (c >>> 1) ^ 0x82f63b78 : c >>> 1;
  }
  return (c ^ 0xffffffff) >>> 0;
}

describe('crc32c', () => {
  it('matches the standard check values', () => {
    expect(crc32c(new TextEncoder().encode('123456789'))).toBe(0xe3069283);
    expect(crc32c(new Uint8Array(32))).toBe(0x8a9136aa); // RFC 3720 B.4: 32 bytes of zeros
    expect(crc32c(new Uint8Array(32).fill(0xff))).toBe(0x62a8ab43);
    expect(crc32c(new Uint8Array(0))).toBe(0);
  });

  it('agrees with a bitwise reference on random inputs and continues across pieces', () => {
    const seed = 42;
    const rng = new Prng(seed);
    for (let t = 0; t < 200; t++) {
      const data = Uint8Array.from({ length: rng.int(100) }, () => rng.int(256));
      expect(crc32c(data), `seed ${seed} case ${t}`).toBe(crcReference(data));
      const cut = rng.int(data.length + 1);
      expect(crc32c(data.subarray(cut), crc32c(data.subarray(0, cut)))).toBe(crcReference(data));
    }
  });
});

describe('records', () => {
  const entries = [
    { term: 3, index: 7, type: 0 as const, data: Uint8Array.of(1, 2, 3) },
    { term: 3, index: 8, type: 1 as const, data: new Uint8Array(0) },
    { term: 2 ** 40, index: 9, type: 0 as const, data: new Uint8Array(1000).fill(5) },
  ];

  it('round-trip entries, hard state (uint64 vote) and snapshot meta through one batch', () => {
    const enc = new BatchEncoder();
    enc.begin(77, 0);
    enc.entries(entries);
    enc.hardState({ term: 5, vote: 18446744073709551615n, commit: 8 });
    enc.snapshotMeta({ index: 6, term: 2, confState: { voters: [1n, 2n ** 63n], learners: [3n] } });
    const bytes = new Uint8Array(enc.finish());
    const frames = [];
    for (let at = 0; at < bytes.length; ) {
      const f = readFrame(bytes, at, bytes.length, 0);
      expect(f.kind).toBe('record');
      if (f.kind !== 'record') break;
      expect(at % 8).toBe(0);
      frames.push(f);
      at = f.next;
    }
    expect(frames.map((f) => [f.type, f.batchSeq, f.lastInBatch])).toEqual([
      [RecordType.Entries, 77, false],
      [RecordType.HardState, 77, false],
      [RecordType.SnapshotMeta, 77, true],
    ]);
    expect(decodeEntries(frames[0]!.payload).map((e) => ({ ...e, data: [...e.data] }))).toEqual(entries.map((e) => ({ ...e, data: [...e.data] })));
    expect(decodeHardState(frames[1]!.payload)).toEqual({ term: 5, vote: 18446744073709551615n, commit: 8 });
    expect(decodeSnapshotMeta(frames[2]!.payload).confState.voters).toEqual([1n, 2n ** 63n]);
  });

  it('detects any single flipped bit', () => {
    const enc = new BatchEncoder();
    enc.begin(1, 0);
    enc.entries(entries.slice(0, 2));
    const bytes = new Uint8Array(enc.finish());
    const payloadEnd = 16 + new DataView(bytes.buffer).getUint32(0, true);
    for (let bit = 0; bit < payloadEnd * 8; bit++) {
      const copy = bytes.slice();
      copy[bit >> 3]! ^= 1 << (bit & 7);
      expect(readFrame(copy, 0, copy.length, 0).kind, `bit ${bit}`).not.toBe('record');
    }
  });

  it('splits large entry lists into records of bounded size', () => {
    const big = Array.from({ length: 40 }, (_, i) => ({ term: 1, index: i + 1, type: 0 as const, data: new Uint8Array(100_000) }));
    const enc = new BatchEncoder();
    enc.begin(0, 0);
    enc.entries(big);
    expect(enc.records).toBeGreaterThanOrEqual(4);
    const bytes = new Uint8Array(enc.finish());
    const indexes: number[] = [];
    for (let at = 0; at < bytes.length; ) {
      const f = readFrame(bytes, at, bytes.length, 0);
      if (f.kind !== 'record') throw new Error('bad frame');
      expect(f.payload.length).toBeLessThanOrEqual(1024 * 1024 + 100_100);
      indexes.push(...decodeEntries(f.payload).map((e) => e.index));
      at = f.next;
    }
    expect(indexes).toEqual(big.map((e) => e.index));
  });
});

describe('witnesses in snapshot metadata (issue 24)', () => {
  const withWitness: SnapshotMeta = { index: 6, term: 2, confState: { voters: [1n, 2n, 3n], learners: [4n], witnesses: [3n] } };
  const plain: SnapshotMeta = { index: 6, term: 2, confState: { voters: [1n, 2n], learners: [] } };

  /** The payload of a one-record batch holding `meta`. */
  const metaRecord = (meta: SnapshotMeta): Uint8Array => {
    const enc = new BatchEncoder();
    enc.begin(1, 0);
    enc.snapshotMeta(meta);
    const bytes = new Uint8Array(enc.finish());
    const f = readFrame(bytes, 0, bytes.length, 0);
    if (f.kind !== 'record') throw new Error('no record');
    return f.payload;
  };

  it('a snapshot meta record and a snapshot file keep the witnesses', () => {
    expect(decodeSnapshotMeta(metaRecord(withWitness))).toEqual(withWitness);
    expect(decodeSnapshotFile(encodeSnapshotFile({ meta: withWitness, data: Uint8Array.of(1) }), 'w.snap').meta).toEqual(withWitness);
  });

  it('a configuration without witnesses is written exactly as before them (older members read it)', () => {
    expect(decodeSnapshotMeta(metaRecord(plain))).toEqual(plain);
    expect((unpack(metaRecord(plain)) as unknown[]).length).toBe(4);
  });
});

describe('snapshot files', () => {
  it('round-trip and reject a flipped byte', () => {
    const s = { meta: { index: 10, term: 2, confState: { voters: [1n], learners: [] } }, data: Uint8Array.of(4, 5, 6) };
    const bytes = encodeSnapshotFile(s);
    const back = decodeSnapshotFile(bytes, 'x.snap');
    expect(back.meta).toEqual(s.meta);
    expect([...back.data]).toEqual([4, 5, 6]);
    bytes[bytes.length - 1]! ^= 1;
    expect(() => decodeSnapshotFile(bytes, 'x.snap')).toThrow(/x\.snap at offset 32: snapshot CRC mismatch/);
  });
});

describe('metrics', () => {
  it('sync histogram uses etcd buckets and cumulative counts', () => {
    expect(syncSecondsBounds[0]).toBe(0.001);
    expect(syncSecondsBounds[13]).toBeCloseTo(8.192);
    const h = new Histogram(syncSecondsBounds);
    h.observe(0.0005);
    h.observe(0.003);
    h.observe(100);
    const s = h.snapshot();
    expect(s.cumulative.slice(0, 3)).toEqual([1, 1, 2]);
    expect(s.cumulative.at(-1)).toBe(3);
    expect(s.count).toBe(3);
  });
});
