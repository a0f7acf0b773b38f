/**
 * The gateway's exact JSON numbers (json-numbers.ts): a number keeps the text it was written as, and a
 * client's string never passes for one (issue 31, item 6: "\u0000number:1e3" read as the number 1e3).
 */
import { describe, expect, it } from 'vitest';
import { jsonToBytes } from '../../../src/api/gateway/json-codec.js';
import { numberMark } from '../../../src/api/gateway/json-numbers.js';
import { parseJson } from '../../../src/api/gateway/json-stream.js';
import { messageType } from '../../../src/api/grpc/proto.js';

/** A gateway request body as the member receives it: parsed, converted, encoded, decoded. */
function received(typeName: string, body: string): Record<string, unknown> {
  const type = messageType(typeName);
  return type.toObject(type.decode(jsonToBytes(type, parseJson(Buffer.from(body)))), { longs: String }) as Record<string, unknown>;
}

describe('gateway JSON numbers', () => {
  it('reads a string equal to the number mark as that string', () => {
    expect(JSON.stringify(numberMark)).toBe('"\\u0000number:"');
    for (const name of [numberMark, `${numberMark}1e3`, `${numberMark}5`, '\u0000', '\u0000\u0000x', '\u0000\u0000number:7', 'plain']) {
      const body = JSON.stringify({ name, password: name });
      expect(received('etcdserverpb.AuthUserAddRequest', body), JSON.stringify(name)).toMatchObject({ name, password: name });
    }
  });

  it('refuses a marked-looking string in a number field as the string it is, not as a number', () => {
    // Before, this was the number 5 (a lease id); Go's decoder refuses the string.
    expect(() => received('etcdserverpb.LeaseGrantRequest', JSON.stringify({ TTL: `${numberMark}5` }))).toThrow(
      'json: invalid value for int64 field TTL: "\\u0000number:5"',
    );
  });

  it('still reads numbers by their text, next to such strings', () => {
    expect(received('etcdserverpb.LeaseGrantRequest', '{"\\u0000x": "\\u0000number:1", "TTL": 9007199254740993}')).toMatchObject({ TTL: '9007199254740993' });
    expect(() => received('etcdserverpb.LeaseGrantRequest', '{"TTL": 1e3}')).toThrow('json: cannot unmarshal number 1e3 into Go value of type int64');
    expect(received('etcdserverpb.RangeRequest', '{"limit": 10, "key": "YQ=="}')).toMatchObject({ limit: '10' });
  });
});
