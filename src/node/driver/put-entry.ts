/**
 * A plain Put's Raft entry written directly (issue 34): the same bytes msgpackr's pack writes for
 * `{ id, req: { kind: 'put', put } }` with the entry codec's options (entry-codec.ts), without its generic
 * per-value dispatch, so decodeRequest reads it unchanged and a member on an older build too. Anything else
 * (an auth stamp, a field of another type, a property this does not know) returns undefined and goes through
 * pack; test/node/driver/put-entry.test.ts holds the two byte for byte.
 *
 * What msgpackr writes here (useRecords false, variableMapSize off): every object as a map16 (de nn nn) in
 * its own key order; short ASCII keys as fixstr (a0|len); a bigint in int64 range as d3 + 8 bytes big-endian;
 * booleans c2/c3; a Uint8Array or Buffer as bin8/16/32 (c4 len / c5 len16 / c6 len32). Worked example, id
 * 0x1234, key "ab", value 01 02 03, lease 0, ignoreValue true:
 *   de0002 a2"id" d3 0000000000001234 a3"req" de0002 a4"kind" a3"put" a3"put" de0006
 *   a3"key" c402 6162  a5"value" c403 010203  a5"lease" d3 0000000000000000
 *   a6"prevKv" c2  ab"ignoreValue" c3  ab"ignoreLease" c2
 */
import { assert } from '../../base/assert.js';

const int64Min = -(1n << 63n);
const int64Max = (1n << 63n) - 1n;

type FieldKind = 'bytes' | 'int64' | 'bool';
/** The fields of a PutRequest this writes, by the type msgpackr would see. */
const putFields: Record<string, FieldKind> = {
  key: 'bytes', value: 'bytes', lease: 'int64', prevKv: 'bool', ignoreValue: 'bool', ignoreLease: 'bool',
};

/** fixstr: every name written here is ASCII and shorter than 32 bytes. */
function fixstr(s: string): Uint8Array {
  const out = new Uint8Array(1 + s.length);
  out[0] = 0xa0 | s.length;
  for (let i = 0; i < s.length; i++) out[i + 1] = s.charCodeAt(i);
  return out;
}

const names = new Map<string, Uint8Array>(['id', 'req', 'kind', 'put', ...Object.keys(putFields)].map((n) => [n, fixstr(n)]));
const idName = names.get('id')!;
const reqName = names.get('req')!;
const kindName = names.get('kind')!;
const putName = names.get('put')!;

function isPlain(o: unknown): o is Record<string, unknown> {
  return typeof o === 'object' && o !== null && Object.getPrototypeOf(o) === Object.prototype;
}

function binHeaderBytes(n: number): number {
  return n < 0x100 ? 2 : n < 0x10000 ? 3 : 5;
}

/** The entry's bytes, or undefined when it is not a plain put (then pack writes it). */
/** `env` is a RaftEnvelope (raft-request.ts, which calls this: typed structurally, so no import cycle). */
export function encodePutEntry(env: { id: bigint; req: unknown }): Uint8Array | undefined {
  const req = env.req;
  if (!isPlain(req) || req.kind !== 'put' || !isPlain(req.put)) return undefined;
  if (typeof env.id !== 'bigint' || env.id < int64Min || env.id > int64Max) return undefined;
  const reqKeys = Object.keys(req);
  if (reqKeys.length !== 2) return undefined; // an auth stamp, or anything more
  const put = req.put;
  const putKeys = Object.keys(put);
  let putBytes = 3;
  for (const k of putKeys) {
    if (!Object.hasOwn(putFields, k)) return undefined;
    const kind = putFields[k];
    const v = put[k];
    if (kind === 'bytes') {
      if (!(v instanceof Uint8Array)) return undefined;
      putBytes += binHeaderBytes(v.length) + v.length;
    } else if (kind === 'int64') {
      if (typeof v !== 'bigint' || v < int64Min || v > int64Max) return undefined;
      putBytes += 9;
    } else {
      if (typeof v !== 'boolean') return undefined;
      putBytes += 1;
    }
    putBytes += names.get(k)!.length;
  }
  const total = 3 + idName.length + 9 + reqName.length + 3 + kindName.length + putName.length + putName.length + putBytes;
  const out = new Uint8Array(total);
  const view = new DataView(out.buffer);
  let at = 0;
  const map16 = (n: number): void => {
    out[at++] = 0xde;
    out[at++] = n >> 8;
    out[at++] = n & 0xff;
  };
  const raw = (b: Uint8Array): void => {
    out.set(b, at);
    at += b.length;
  };
  const int64 = (v: bigint): void => {
    out[at++] = 0xd3;
    view.setBigInt64(at, v);
    at += 8;
  };
  map16(2);
  raw(idName);
  int64(env.id);
  raw(reqName);
  map16(2);
  for (const k of reqKeys) {
    if (k === 'kind') {
      raw(kindName);
      raw(putName); // the value 'put'
    } else if (k === 'put') {
      raw(putName);
      map16(putKeys.length);
      for (const f of putKeys) {
        raw(names.get(f)!);
        const v = put[f];
        if (typeof v === 'boolean') out[at++] = v ? 0xc3 : 0xc2;
        else if (typeof v === 'bigint') int64(v);
        else {
          const b = v as Uint8Array;
          if (b.length < 0x100) {
            out[at++] = 0xc4;
            out[at++] = b.length;
          } else if (b.length < 0x10000) {
            out[at++] = 0xc5;
            view.setUint16(at, b.length);
            at += 2;
          } else {
            out[at++] = 0xc6;
            view.setUint32(at, b.length);
            at += 4;
          }
          raw(b);
        }
      }
    } else {
      return undefined;
    }
  }
  assert(at === total, `put entry: wrote ${at} of ${total} bytes`);
  return out;
}
