import { describe, expect, it } from 'vitest';
import { Prng } from '../../src/base/prng.js';
import { FrameReader, FrameType, ProtocolError, decodePayload, encodeFrame, frameHeader } from '../../src/peer/frame.js';

describe('peer frames', () => {
  it('parses frames however the bytes are split', () => {
    const frames = [
      encodeFrame(FrameType.Messages, [{ from: 1n, to: 2n, term: 3, data: new Uint8Array([9, 8]) }]),
      Buffer.concat([frameHeader(FrameType.SnapChunk, 3), Buffer.from([1, 2, 3])]),
      encodeFrame(FrameType.Refused, { reason: 'x' }),
    ];
    const wire = Buffer.concat(frames);
    for (let cut = 0; cut <= wire.length; cut++) {
      for (const step of [1, 7, wire.length]) {
        const reader = new FrameReader();
        const got = [];
        got.push(...reader.push(wire.subarray(0, cut)));
        for (let i = cut; i < wire.length; i += step) got.push(...reader.push(wire.subarray(i, Math.min(wire.length, i + step))));
        expect(got.map((f) => f.type)).toEqual([FrameType.Messages, FrameType.SnapChunk, FrameType.Refused]);
        expect(decodePayload(got[0]!)).toEqual([{ from: 1n, to: 2n, term: 3, data: Buffer.from([9, 8]) }]);
        expect([...got[1]!.payload]).toEqual([1, 2, 3]);
      }
    }
  });

  it('rejects absurd lengths and unknown types before buffering a body', () => {
    expect(() => new FrameReader().push(Buffer.from([0xff, 0xff, 0xff, 0xff, 5]))).toThrow(ProtocolError);
    expect(() => new FrameReader().push(Buffer.from([0, 0, 0, 0, 5]))).toThrow(/bad frame length 0/);
    // A client that dialled the peer port is named as such, not as a frame length of 1347569952 ("PRI ").
    expect(() => new FrameReader().push(Buffer.from('PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n'))).toThrow(/an HTTP\/2 client .* reached the peer port/);
    expect(() => new FrameReader().push(Buffer.from('GET /health HTTP/1.1\r\n'))).toThrow(/an HTTP\/1 client reached the peer port/);
    expect(() => new FrameReader().push(Buffer.from([0, 0, 0, 1, 200]))).toThrow(/unknown frame type 200/);
  });

  it('keeps number fields numbers (even past 2^32) and bigint fields bigints (even small ones)', () => {
    const value = { term: 2 ** 40, index: Number.MAX_SAFE_INTEGER, commit: 0, from: 1n, to: 0n, max: 2n ** 64n - 1n };
    const [frame] = new FrameReader().push(encodeFrame(FrameType.Messages, value));
    expect(decodePayload(frame!)).toStrictEqual(value);
  });

  it('round-trips random uint64 ids and byte payloads (seeded)', () => {
    const seed = 0x5eed;
    const rng = new Prng(seed);
    for (let i = 0; i < 200; i++) {
      const id = (BigInt(rng.int(2 ** 30)) << 34n) | BigInt(rng.int(2 ** 30));
      const data = new Uint8Array(rng.int(300)).map(() => rng.int(256));
      const [frame] = new FrameReader().push(encodeFrame(FrameType.Messages, { id, data }));
      expect(decodePayload(frame!), `seed ${seed} iteration ${i}`).toEqual({ id, data: Buffer.from(data) });
    }
  });
});
