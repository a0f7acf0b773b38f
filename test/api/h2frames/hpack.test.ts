/** The HPACK decoder and encoders: RFC 7541 Appendix C byte for byte, malformed blocks, the header list limit. */
import { describe, expect, it } from 'vitest';
import {
  HpackDecoder,
  HpackError,
  encodeIndexed,
  encodeLiteralIndexedName,
  encodeLiteralNewName,
} from '../../../src/api/h2frames/hpack.js';
import {
  indexed,
  integer,
  literalIndexed,
  literalNeverIndexed,
  literalNotIndexed,
  sizeUpdate,
  string,
} from './hpack-test-encoder.js';

const hex = (h: string): Buffer => Buffer.from(h.replace(/\s/g, ''), 'hex');
const pairs = (fields: string[]): [string, string][] =>
  fields.flatMap((f, i) => (i % 2 === 0 ? [[f, fields[i + 1]!] as [string, string]] : []));
const listMax = 64 * 1024;

interface Step {
  block: string;
  fields: [string, string][];
  tableBytes: number;
  tableLength: number;
}

function runExample(steps: Step[], tableBytesMax?: number): void {
  const decoder = new HpackDecoder(listMax, tableBytesMax === undefined ? {} : { tableBytesMax });
  for (const [i, step] of steps.entries()) {
    const { fields, tooLarge } = decoder.decode(hex(step.block));
    expect(pairs(fields), `block ${i}`).toEqual(step.fields);
    expect(tooLarge).toBe(false);
    expect([decoder.tableBytes, decoder.tableLength], `table after block ${i}`).toEqual([step.tableBytes, step.tableLength]);
  }
}

const request1: [string, string][] = [[':method', 'GET'], [':scheme', 'http'], [':path', '/'], [':authority', 'www.example.com']];
const request2: [string, string][] = [...request1, ['cache-control', 'no-cache']];
const request3: [string, string][] = [
  [':method', 'GET'], [':scheme', 'https'], [':path', '/index.html'], [':authority', 'www.example.com'],
  ['custom-key', 'custom-value'],
];
const date1 = 'Mon, 21 Oct 2013 20:13:21 GMT';
const date2 = 'Mon, 21 Oct 2013 20:13:22 GMT';
const location = 'https://www.example.com';
const response1: [string, string][] = [[':status', '302'], ['cache-control', 'private'], ['date', date1], ['location', location]];
const response2: [string, string][] = [[':status', '307'], ['cache-control', 'private'], ['date', date1], ['location', location]];
const response3: [string, string][] = [
  [':status', '200'], ['cache-control', 'private'], ['date', date2], ['location', location], ['content-encoding', 'gzip'],
  ['set-cookie', 'foo=ASDJKHQKBZXOQWEOPIUAXQWEOIU; max-age=3600; version=1'],
];

describe('HpackDecoder: RFC 7541 Appendix C', () => {
  it('C.2.1 literal with indexing', () => {
    const block = '400a 6375 7374 6f6d 2d6b 6579 0d63 7573 746f 6d2d 6865 6164 6572';
    runExample([{ block, fields: [['custom-key', 'custom-header']], tableBytes: 55, tableLength: 1 }]);
  });
  it('C.2.2 literal without indexing', () => {
    runExample([{ block: '040c 2f73 616d 706c 652f 7061 7468', fields: [[':path', '/sample/path']], tableBytes: 0, tableLength: 0 }]);
  });
  it('C.2.3 literal never indexed', () => {
    runExample([{ block: '1008 7061 7373 776f 7264 0673 6563 7265 74', fields: [['password', 'secret']], tableBytes: 0, tableLength: 0 }]);
  });
  it('C.2.4 indexed field', () => {
    runExample([{ block: '82', fields: [[':method', 'GET']], tableBytes: 0, tableLength: 0 }]);
  });

  it('C.3 requests without Huffman coding', () => {
    runExample([
      { block: '8286 8441 0f77 7777 2e65 7861 6d70 6c65 2e63 6f6d', fields: request1, tableBytes: 57, tableLength: 1 },
      { block: '8286 84be 5808 6e6f 2d63 6163 6865', fields: request2, tableBytes: 110, tableLength: 2 },
      { block: '8287 85bf 400a 6375 7374 6f6d 2d6b 6579 0c63 7573 746f 6d2d 7661 6c75 65', fields: request3, tableBytes: 164, tableLength: 3 },
    ]);
  });

  it('C.4 requests with Huffman coding', () => {
    runExample([
      { block: '8286 8441 8cf1 e3c2 e5f2 3a6b a0ab 90f4 ff', fields: request1, tableBytes: 57, tableLength: 1 },
      { block: '8286 84be 5886 a8eb 1064 9cbf', fields: request2, tableBytes: 110, tableLength: 2 },
      { block: '8287 85bf 4088 25a8 49e9 5ba9 7d7f 8925 a849 e95b b8e8 b4bf', fields: request3, tableBytes: 164, tableLength: 3 },
    ]);
  });

  it('C.5 responses without Huffman coding, evicting at 256 bytes', () => {
    runExample(
      [
        {
          block: [
            '4803 3330 3258 0770 7269 7661 7465 611d 4d6f 6e2c 2032 3120 4f63 7420 3230 3133 2032 303a 3133 3a32',
            '3120 474d 546e 1768 7474 7073 3a2f 2f77 7777 2e65 7861 6d70 6c65 2e63 6f6d',
          ].join(' '),
          fields: response1,
          tableBytes: 222,
          tableLength: 4,
        },
        { block: '4803 3330 37c1 c0bf', fields: response2, tableBytes: 222, tableLength: 4 },
        {
          block: [
            '88c1 611d 4d6f 6e2c 2032 3120 4f63 7420 3230 3133 2032 303a 3133 3a32 3220 474d 54c0 5a04 677a 6970',
            '7738 666f 6f3d 4153 444a 4b48 514b 425a 584f 5157 454f 5049 5541 5851 5745 4f49 553b 206d 6178 2d61',
            '6765 3d33 3630 303b 2076 6572 7369 6f6e 3d31',
          ].join(' '),
          fields: response3,
          tableBytes: 215,
          tableLength: 3,
        },
      ],
      256,
    );
  });

  it('C.6 responses with Huffman coding, evicting at 256 bytes', () => {
    runExample(
      [
        {
          block: [
            '4882 6402 5885 aec3 771a 4b61 96d0 7abe 9410 54d4 44a8 2005 9504 0b81 66e0 82a6 2d1b ff6e 919d 29ad',
            '1718 63c7 8f0b 97c8 e9ae 82ae 43d3',
          ].join(' '),
          fields: response1,
          tableBytes: 222,
          tableLength: 4,
        },
        { block: '4883 640e ffc1 c0bf', fields: response2, tableBytes: 222, tableLength: 4 },
        {
          block: [
            '88c1 6196 d07a be94 1054 d444 a820 0595 040b 8166 e084 a62d 1bff c05a 839b d9ab 77ad 94e7 821d d7f2',
            'e6c7 b335 dfdf cd5b 3960 d5af 2708 7f36 72c1 ab27 0fb5 291f 9587 3160 65c0 03ed 4ee5 b106 3d50 07',
          ].join(' '),
          fields: response3,
          tableBytes: 215,
          tableLength: 3,
        },
      ],
      256,
    );
  });
});

describe('HpackDecoder: the dynamic table', () => {
  it('indexes entries newest first and evicts the oldest', () => {
    const decoder = new HpackDecoder(listMax, { tableBytesMax: 100 });
    // Each entry: 1 + 1 + 32 = 34 bytes, so two fit in 100.
    decoder.decode(Buffer.concat([literalIndexed('a', '1'), literalIndexed('b', '2')]));
    expect(pairs(decoder.decode(Buffer.concat([indexed(62), indexed(63)])).fields)).toEqual([['b', '2'], ['a', '1']]);
    decoder.decode(literalIndexed('c', '3'));
    expect(pairs(decoder.decode(Buffer.concat([indexed(62), indexed(63)])).fields)).toEqual([['c', '3'], ['b', '2']]);
    expect(() => decoder.decode(indexed(64))).toThrow(HpackError);
  });

  it('takes a literal\'s name from an entry it is about to evict (RFC 7541 4.4)', () => {
    const decoder = new HpackDecoder(listMax, { tableBytesMax: 70 });
    decoder.decode(literalIndexed('name', 'x')); // 37 bytes
    const { fields } = decoder.decode(literalIndexed(62, 'yy')); // 38: evicts the entry its name came from
    expect(pairs(fields)).toEqual([['name', 'yy']]);
    expect([decoder.tableLength, decoder.tableBytes]).toEqual([1, 38]);
  });

  it('empties the table for an entry larger than it, and keeps working', () => {
    const decoder = new HpackDecoder(listMax, { tableBytesMax: 64 });
    decoder.decode(literalIndexed('a', '1'));
    expect(pairs(decoder.decode(literalIndexed('big', 'x'.repeat(100))).fields)).toEqual([['big', 'x'.repeat(100)]]);
    expect([decoder.tableLength, decoder.tableBytes]).toEqual([0, 0]);
    decoder.decode(literalIndexed('a', '2'));
    expect(pairs(decoder.decode(indexed(62)).fields)).toEqual([['a', '2']]);
  });

  it('wraps its ring many times at the default 4096 bytes', () => {
    const decoder = new HpackDecoder(listMax);
    for (let i = 0; i < 1000; i++) {
      const { fields } = decoder.decode(Buffer.concat([literalIndexed('k', String(i)), ...(i > 0 ? [indexed(63)] : [])]));
      expect(fields).toEqual(i > 0 ? ['k', String(i), 'k', String(i - 1)] : ['k', '0']);
    }
    expect(decoder.tableBytes).toBeLessThanOrEqual(4096);
  });

  it('applies size updates at the start of a block: shrink evicts, grow back up to the setting', () => {
    const decoder = new HpackDecoder(listMax);
    decoder.decode(Buffer.concat([literalIndexed('a', '1'), literalIndexed('b', '2')]));
    expect(decoder.decode(Buffer.concat([sizeUpdate(40), indexed(62)])).fields).toEqual(['b', '2']);
    expect(decoder.tableLength).toBe(1);
    // Two updates in a row (RFC 7541 4.2: the smallest, then the final one), then the full 4096.
    expect(decoder.decode(Buffer.concat([sizeUpdate(0), sizeUpdate(4096), literalIndexed('c', '3')])).fields).toEqual(['c', '3']);
    expect([decoder.tableLength, decoder.tableBytes]).toEqual([1, 34]);
    // With size 0, nothing is kept.
    decoder.decode(Buffer.concat([sizeUpdate(0), literalIndexed('d', '4')]));
    expect(decoder.tableLength).toBe(0);
  });
});

describe('HpackDecoder: malformed blocks throw HpackError', () => {
  const bad: [string, Buffer][] = [
    ['index 0', hex('80')],
    ['an index past an empty dynamic table', hex('be')],
    ['an index past the dynamic table', Buffer.concat([literalIndexed('a', '1'), indexed(63)])],
    ['a literal name index past the table', literalNotIndexed(62, 'v')],
    ['a truncated integer', hex('ff')],
    ['a truncated integer with continuation bytes', hex('ff 80 80')],
    ['an integer with 6 continuation bytes', hex('ff 80 80 80 80 80 01')],
    ['an integer over 2^31', hex('ff ff ff ff ff 0f')],
    ['a string length over 2^31', hex('40 7f ff ff ff ff 0f')],
    ['a literal without its name', hex('40')],
    ['a literal without its value', hex('41')],
    ['a literal name cut short', hex('40 0a 6375 7374')],
    ['a literal value cut short', Buffer.concat([hex('40'), string('custom-key', false), hex('0d 6375')])],
    ['a Huffman value cut short', hex('44 85 6402')],
    ['a size update over 4096', sizeUpdate(4097)],
    ['a size update after a field', Buffer.concat([indexed(2), sizeUpdate(0)])],
    ['a Huffman value with EOS', Buffer.concat([integer(0x00, 4, 4), hex('85 1f ff ff ff ff')])],
    ['a Huffman value with 11 bits of padding', Buffer.concat([integer(0x00, 4, 4), hex('82 1f ff')])],
    ['a Huffman value whose padding is not ones', Buffer.concat([integer(0x00, 4, 4), hex('81 1e')])],
    ['a Huffman name with EOS', hex('00 84 ff ff ff ff 01 61')],
  ];
  it.each(bad)('%s', (_what, block) => {
    expect(() => new HpackDecoder(listMax).decode(block)).toThrow(HpackError);
  });

  it('refuses to be used again after an HpackError (its table is out of step)', () => {
    const decoder = new HpackDecoder(listMax);
    expect(() => decoder.decode(hex('80'))).toThrow(HpackError);
    expect(() => decoder.decode(hex('82'))).toThrow(/used after an HpackError/);
  });

  it('a size update over a smaller setting', () => {
    expect(() => new HpackDecoder(listMax, { tableBytesMax: 256 }).decode(sizeUpdate(257))).toThrow(HpackError);
    expect(new HpackDecoder(listMax, { tableBytesMax: 256 }).decode(sizeUpdate(256)).fields).toEqual([]);
  });

  it('accepts an empty block, empty strings, and integers with zero continuation bytes', () => {
    const decoder = new HpackDecoder(listMax);
    expect(decoder.decode(Buffer.alloc(0))).toEqual({ fields: [], tooLarge: false });
    expect(decoder.decode(hex('00 00 00')).fields).toEqual(['', '']);
    expect(decoder.decode(hex('00 80 80')).fields).toEqual(['', '']); // Huffman-coded empty strings
    expect(decoder.decode(hex('0f 80 80 80 80 00 00')).fields).toEqual(['accept-charset', '']); // name index 15 + 0, four 0x80 bytes
  });
});

describe('HpackDecoder: the header list limit', () => {
  it('stops collecting at the limit but keeps the table in step', () => {
    const decoder = new HpackDecoder(100);
    // :method GET is 42 bytes; k = v*60 is 93: over 100, as is the list from there on.
    const first = decoder.decode(Buffer.concat([indexed(2), literalIndexed('k', 'v'.repeat(60)), literalIndexed('k2', 'w'), indexed(3)]));
    expect(first).toEqual({ fields: [':method', 'GET'], tooLarge: true });
    expect(decoder.tableLength).toBe(2);
    // Both entries the too-large block added are there, newest first.
    expect(decoder.decode(indexed(63))).toEqual({ fields: ['k', 'v'.repeat(60)], tooLarge: false });
    expect(decoder.decode(indexed(62))).toEqual({ fields: ['k2', 'w'], tooLarge: false });
  });

  it('counts each field as name + value + 32 (RFC 7540 6.5.2), exactly at the limit is fine', () => {
    expect(new HpackDecoder(42).decode(indexed(2))).toEqual({ fields: [':method', 'GET'], tooLarge: false });
    expect(new HpackDecoder(41).decode(indexed(2))).toEqual({ fields: [], tooLarge: true });
  });

  it('still throws on a malformed field after the limit was passed', () => {
    expect(() => new HpackDecoder(41).decode(Buffer.concat([indexed(2), indexed(0)]))).toThrow(HpackError);
  });
});

describe('HPACK encoders (literal without indexing, no Huffman)', () => {
  it.each([
    ['encodeIndexed(8)', encodeIndexed(8), '88', [':status', '200']],
    [
      'encodeLiteralIndexedName(31, application/grpc)',
      encodeLiteralIndexedName(31, 'application/grpc'),
      '0f10 10' + Buffer.from('application/grpc').toString('hex'),
      ['content-type', 'application/grpc'],
    ],
    ['encodeLiteralIndexedName(14, x)', encodeLiteralIndexedName(14, 'x'), '0e 01 78', [':status', 'x']],
    [
      'encodeLiteralNewName(grpc-status, 0)',
      encodeLiteralNewName('grpc-status', '0'),
      '00 0b' + Buffer.from('grpc-status').toString('hex') + '01 30',
      ['grpc-status', '0'],
    ],
  ] as const)('%s is byte for byte', (_what, encoded, bytes, field) => {
    expect(encoded.toString('hex')).toBe(bytes.replace(/\s/g, ''));
    const decoder = new HpackDecoder(listMax);
    expect(decoder.decode(encoded).fields).toEqual(field);
    expect(decoder.tableLength).toBe(0);
  });

  it('round-trips long and latin1 values (multi-byte lengths)', () => {
    const value = 'm%C3%A9ssage ' + 'é'.repeat(200) + 'x'.repeat(20_000);
    const block = Buffer.concat([encodeIndexed(8), encodeLiteralNewName('grpc-message', value), encodeLiteralIndexedName(61, value)]);
    expect(new HpackDecoder(listMax).decode(block).fields).toEqual([':status', '200', 'grpc-message', value, 'www-authenticate', value]);
  });

  it('asserts on what it cannot encode', () => {
    expect(() => encodeIndexed(0)).toThrow();
    expect(() => encodeIndexed(62)).toThrow();
    expect(() => encodeLiteralNewName('Grpc-Status', '0')).toThrow();
    expect(() => encodeLiteralNewName('grpc-message', '\u0100')).toThrow();
  });
});

describe('test encoder sanity', () => {
  it('never-indexed literals decode and add nothing', () => {
    const decoder = new HpackDecoder(listMax);
    expect(decoder.decode(Buffer.concat([literalNeverIndexed('authorization', 'secret', true), literalNeverIndexed(23, 's2')])).fields).toEqual([
      'authorization', 'secret', 'authorization', 's2',
    ]);
    expect(decoder.tableLength).toBe(0);
  });
});
