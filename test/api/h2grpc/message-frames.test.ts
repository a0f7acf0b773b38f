import { describe, expect, it } from 'vitest';
import { FrameError, MessageReader, frameMessage } from '../../../src/api/h2grpc/message-frames.js';
import { Prng } from '../../../src/base/prng.js';

const framed = (...messages: string[]): Buffer => Buffer.concat(messages.map((m) => frameMessage(Buffer.from(m))));

describe('MessageReader', () => {
  it('reads the worked example: a message split across chunks, then an empty one', () => {
    const r = new MessageReader(16);
    expect(r.push(Buffer.from([0, 0, 0, 0, 3, 0x61]))).toEqual([]);
    expect(r.push(Buffer.from([0x62, 0x63, 0, 0])).map(String)).toEqual(['abc']);
    expect(r.partial).toBe(true);
    expect(r.push(Buffer.from([0, 0, 0])).map(String)).toEqual(['']);
    expect(r.partial).toBe(false);
  });

  it('reads several messages from one chunk', () => {
    expect(new MessageReader(100).push(framed('a', '', 'bcd')).map(String)).toEqual(['a', '', 'bcd']);
  });

  it('refuses a message larger than the limit from its header, with grpc-js words', () => {
    const r = new MessageReader(16);
    expect(() => r.push(Buffer.from([0, 0, 0, 0, 17]))).toThrow(new FrameError('tooLarge', 'Received message larger than max (17 vs 16)'));
  });

  it('refuses a compressed message', () => {
    expect(() => new MessageReader(16).push(Buffer.from([1, 0, 0, 0, 1, 0]))).toThrow(FrameError);
  });

  it('yields the same messages however the bytes are split (seeded)', () => {
    const seed = 34;
    const prng = new Prng(seed);
    const messages = Array.from({ length: 50 }, (_, i) => 'x'.repeat(prng.int(41)) + i);
    const bytes = framed(...messages);
    for (let round = 0; round < 50; round++) {
      const r = new MessageReader(100);
      const out: string[] = [];
      for (let at = 0; at < bytes.length; ) {
        const n = Math.min(bytes.length - at, 1 + prng.int(12));
        out.push(...r.push(bytes.subarray(at, at + n)).map(String));
        at += n;
      }
      expect(out, `seed ${seed} round ${round}`).toEqual(messages);
    }
  });
});
