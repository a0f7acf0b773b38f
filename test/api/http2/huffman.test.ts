/** HPACK Huffman decoding (RFC 7541 5.2, Appendix B): the RFC's examples, every symbol, and the three rejections. */
import { describe, expect, it } from 'vitest';
import { Prng } from '../../../src/base/prng.js';
import { huffmanDecode } from '../../../src/api/http2/huffman.js';
import { huffmanEncode } from '../h2frames/hpack-test-encoder.js';

const hex = (h: string): Buffer => Buffer.from(h.replace(/\s/g, ''), 'hex');

describe('huffmanDecode', () => {
  it.each([
    ['f1e3 c2e5 f23a 6ba0 ab90 f4ff', 'www.example.com'], // C.4.1
    ['a8eb 1064 9cbf', 'no-cache'], // C.4.2
    ['25a8 49e9 5ba9 7d7f', 'custom-key'], // C.4.3
    ['25a8 49e9 5bb8 e8b4 bf', 'custom-value'], // C.4.3
    ['6402', '302'], // C.6.1
    ['aec3 771a 4b', 'private'], // C.6.1
    ['d07a be94 1054 d444 a820 0595 040b 8166 e082 a62d 1bff', 'Mon, 21 Oct 2013 20:13:21 GMT'], // C.6.1
    ['9d29 ad17 1863 c78f 0b97 c8e9 ae82 ae43 d3', 'https://www.example.com'], // C.6.1
    ['', ''],
  ])('decodes the RFC example %s', (coded, text) => {
    expect(huffmanDecode(hex(coded))).toBe(text);
  });

  it('decodes every symbol, alone and all together, as latin1 chars', () => {
    const all = Array.from({ length: 256 }, (_, b) => String.fromCharCode(b)).join('');
    for (const c of all) expect(huffmanDecode(huffmanEncode(c))).toBe(c);
    expect(huffmanDecode(huffmanEncode(all))).toBe(all);
    expect(huffmanDecode(huffmanEncode(all.split('').reverse().join('')))).toBe(all.split('').reverse().join(''));
  });

  it('decodes a range of a larger buffer', () => {
    const coded = Buffer.concat([Buffer.from([1, 2, 3]), huffmanEncode('grpc-go/1.26.0'), Buffer.from([0])]);
    expect(huffmanDecode(coded, 3, coded.length - 1)).toBe('grpc-go/1.26.0');
  });

  it('round-trips random byte strings, short and long (seeded)', () => {
    const seed = 7541;
    const rng = new Prng(seed);
    for (let round = 0; round < 300; round++) {
      const length = round % 10 === 0 ? rng.int(40_000) : rng.int(64);
      // Mostly header-ish ASCII, sometimes any byte (long codes, the tables' deep states).
      const any = rng.int(3) === 0;
      let text = '';
      for (let i = 0; i < length; i++) text += String.fromCharCode(any ? rng.int(256) : 0x20 + rng.int(95));
      expect(huffmanDecode(huffmanEncode(text)), `seed ${seed} round ${round}`).toBe(text);
    }
  });

  it.each([
    // 'a' is 00011: then EOS's 30 one-bits, then 5 one-bits of padding.
    ['EOS inside the string', Buffer.from([0b00011111, 0xff, 0xff, 0xff, 0xff])],
    ['EOS alone', Buffer.from([0xff, 0xff, 0xff, 0xfc])],
    // 'a' then 3 one-bits ends the first byte; a whole byte of ones more is 11 bits of padding.
    ['padding longer than 7 bits', Buffer.from([0b00011111, 0xff])],
    ['a byte of padding alone', Buffer.from([0xff])],
    // 'a' then 110: padding must be the EOS prefix 111.
    ['padding that is not all ones', Buffer.from([0b00011110])],
    ['a code cut short (not the EOS prefix)', Buffer.from([0b00011000])],
  ])('rejects %s', (_what, coded) => {
    expect(huffmanDecode(coded)).toBeUndefined();
  });

  it('accepts up to 7 bits of padding', () => {
    // '0' is 00000 and 'a' 00011 (5 bits each).
    expect(huffmanDecode(Buffer.from([0b00000111]))).toBe('0'); // 3 bits of padding
    expect(huffmanDecode(Buffer.from([0b00011000, 0b11111111]))).toBe('aa'); // 6 bits
    expect(huffmanDecode(Buffer.from([0b00011000, 0b11000110, 0b00001111]))).toBe('aaa0'); // 20 bits + 4
    expect(huffmanDecode(Buffer.from([0b00000000, 0b00000000, 0b00000000, 0b00000000, 0b00011111]))).toBe('0000000'); // 35 + 5
    expect(huffmanDecode(Buffer.from([0b00000000, 0b00000000, 0b00000000, 0b00000000, 0b00011101]))).toBeUndefined(); // 11101 is no padding
  });
});
