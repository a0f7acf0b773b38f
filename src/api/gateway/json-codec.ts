/**
 * Protobuf messages ↔ the JSON of etcd's gRPC gateway (grpc-gateway v1 with golang/protobuf jsonpb,
 * `OrigName: true`, `EmitDefaults: false`):
 *   - field names as written in the .proto (`create_revision`, `grantedTTL`, `peerURLs`);
 *   - int64/uint64 as decimal strings, bytes as standard base64, enums by name;
 *   - fields at their default (0, "", false, empty list, unset message) left out.
 * Input accepts the proto names and the lowerCamel JSON names, strings or numbers for 64-bit integers, enum
 * names or numbers, and ignores unknown fields (as etcd's gateway does).
 */
import protobuf from 'protobufjs';
import { assert, AssertionError } from '../../base/assert.js';
import type { Wire } from '../grpc/proto.js';
import { isDepthError, origFieldNames } from '../grpc/proto.js';
import { protobufDepthMax } from '../../base/limits.js';
import { clientString, numberMark } from './json-numbers.js';

/** A request the gateway cannot turn into a message: answered InvalidArgument, as the gateway does. */
export class JsonRequestError extends Error {
  override name = 'JsonRequestError';
}

/** Messages nested past protobufDepthMax (only a Txn can be): the gateway answers it as etcd (gateway.ts). */
export class JsonDepthError extends JsonRequestError {
  override name = 'JsonDepthError';
}

const int64Types = new Set(['int64', 'uint64', 'sint64', 'fixed64', 'sfixed64']);
const int32Types = new Set(['int32', 'uint32', 'sint32', 'fixed32', 'sfixed32']);

// ---- message → JSON ----

function scalarToJson(field: protobuf.Field, v: unknown): unknown {
  if (field.resolvedType instanceof protobuf.Enum) return field.resolvedType.valuesById[v as number] ?? v;
  if (field.resolvedType instanceof protobuf.Type) return messageToJson(field.resolvedType, v as Wire);
  if (int64Types.has(field.type)) return longToString(v, field.type === 'uint64' || field.type === 'fixed64');
  if (field.type === 'bytes') return Buffer.from(v as Uint8Array).toString('base64');
  return v;
}

function longToString(v: unknown, unsigned: boolean): string {
  if (typeof v === 'number') return String(v);
  const l = v as { low: number; high: number };
  const bits = (BigInt(l.high >>> 0) << 32n) | BigInt(l.low >>> 0);
  return (unsigned ? BigInt.asUintN(64, bits) : BigInt.asIntN(64, bits)).toString();
}

function isDefault(field: protobuf.Field, v: unknown): boolean {
  if (v === undefined || v === null) return true;
  if (field.repeated) return (v as unknown[]).length === 0;
  if (field.resolvedType instanceof protobuf.Type) return false;
  if (typeof v === 'number') return v === 0;
  if (typeof v === 'boolean' || typeof v === 'string') return !v;
  // protobufjs decodes an empty bytes field as an empty array.
  if (v instanceof Uint8Array || Array.isArray(v)) return v.length === 0;
  const l = v as { low: number; high: number };
  return l.low === 0 && l.high === 0;
}

/** A decoded message (protobufjs instance, camelCase fields) as the gateway's JSON object. */
export function messageToJson(type: protobuf.Type, m: Wire): Record<string, unknown> {
  const names = origFieldNames(type);
  const out: Record<string, unknown> = {};
  for (const field of type.fieldsArray) {
    const v = m[field.name] as unknown;
    if (isDefault(field, v)) continue;
    const name = names.get(field.name) ?? field.name;
    out[name] = field.repeated ? (v as unknown[]).map((x) => scalarToJson(field, x)) : scalarToJson(field, v);
  }
  return out;
}

// ---- JSON → message ----

function lowerCamel(name: string): string {
  return name.replace(/_([a-z0-9])/g, (_m, c: string) => c.toUpperCase());
}

function fieldIndex(type: protobuf.Type): Map<string, protobuf.Field> {
  const names = origFieldNames(type);
  const index = new Map<string, protobuf.Field>();
  for (const field of type.fieldsArray) {
    const orig = names.get(field.name) ?? field.name;
    index.set(orig, field);
    index.set(lowerCamel(orig), field);
    index.set(field.name, field);
  }
  return index;
}

const indexes = new WeakMap<protobuf.Type, Map<string, protobuf.Field>>();

/** etcd's gateway reports the first byte a strict standard-base64 decoder rejects. */
function base64Bytes(v: unknown): Buffer {
  if (typeof v !== 'string') throw new JsonRequestError('json: cannot unmarshal into a bytes field');
  const s = clientString(v);
  const bad = s.search(/[^A-Za-z0-9+/=]/);
  if (bad >= 0) throw new JsonRequestError(`illegal base64 data at input byte ${bad}`);
  if (s.length % 4 !== 0) throw new JsonRequestError(`illegal base64 data at input byte ${s.length - (s.length % 4)}`);
  return Buffer.from(s, 'base64');
}

/** The Go type jsonpb decodes each protobuf integer into, and its range. */
const integerRanges: Record<string, { go: string; min: bigint; max: bigint }> = (() => {
  const int64 = { go: 'int64', min: -(2n ** 63n), max: 2n ** 63n - 1n };
  const uint64 = { go: 'uint64', min: 0n, max: 2n ** 64n - 1n };
  const int32 = { go: 'int32', min: -(2n ** 31n), max: 2n ** 31n - 1n };
  const uint32 = { go: 'uint32', min: 0n, max: 2n ** 32n - 1n };
  return { int64, sint64: int64, sfixed64: int64, uint64, fixed64: uint64, int32, sint32: int32, sfixed32: int32, uint32, fixed32: uint32 };
})();

/**
 * A decimal integer (JSON number or string) within its field's range. protobufjs would wrap an overflow
 * silently (a limit of 10^22 became a valid-looking limit); etcd's gateway answers 400 with Go's message.
 */
function integer(field: protobuf.Field, v: unknown): unknown {
  const range = integerRanges[field.type];
  assert(range !== undefined, `no integer range for ${field.type}`);
  if (typeof v === 'boolean') throw new JsonRequestError(`json: cannot unmarshal bool into Go value of type ${range.go}`);
  const written = numberText(v);
  const text = written ?? (typeof v === 'string' ? clientString(v) : v);
  const outOfRange = (): JsonRequestError => new JsonRequestError(`json: cannot unmarshal number ${String(text)} into Go value of type ${range.go}`);
  if (typeof text !== 'string' || !/^-?\d+$/.test(text)) {
    if (written !== undefined) throw outOfRange();
    throw new JsonRequestError(`json: invalid value for ${field.type} field ${field.name}: ${JSON.stringify(text)}`);
  }
  const n = BigInt(text);
  if (n < range.min || n > range.max) throw outOfRange();
  return int64Types.has(field.type) ? text : Number(text);
}

/**
 * The text of a JSON number as the request wrote it (json-numbers.ts exactNumbers), or undefined for a
 * non-number. Read it before clientString: a client's string never passes for a number, marked or not.
 */
function numberText(v: unknown): string | undefined {
  if (typeof v === 'number') return String(v);
  return typeof v === 'string' && v.startsWith(numberMark) ? v.slice(numberMark.length) : undefined;
}

const loneSurrogate = /[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/g;

function scalarFromJson(field: protobuf.Field, v: unknown, depth: number): unknown {
  if (field.resolvedType instanceof protobuf.Type) return objectFromJson(field.resolvedType, v, depth + 1);
  if (field.resolvedType instanceof protobuf.Enum) {
    const e = field.resolvedType;
    const written = numberText(v);
    if (written !== undefined) {
      if (/^-?\d+$/.test(written)) return Number(written);
    } else if (typeof v === 'string' && clientString(v) in e.values) return e.values[clientString(v)];
    throw new JsonRequestError(`unknown value ${JSON.stringify(typeof v === 'string' ? clientString(v) : v)} for enum ${e.name}`);
  }
  if (field.type === 'bytes') return base64Bytes(v);
  if (int64Types.has(field.type) || int32Types.has(field.type)) return integer(field, v);
  if (field.type === 'bool') {
    if (typeof v !== 'boolean') throw new JsonRequestError(`json: invalid value for bool field ${field.name}`);
    return v;
  }
  if (field.type === 'string') {
    if (typeof v !== 'string' || numberText(v) !== undefined) throw new JsonRequestError(`json: invalid value for string field ${field.name}`);
    // JSON may escape a lone surrogate ("\ud800"), which no UTF-8 can encode; Go's decoder (etcd's gateway)
    // makes it U+FFFD. Left as is, protobufjs wrote bytes its own decoder refused (fuzz case seed 294706170).
    return clientString(v).replace(loneSurrogate, '\ufffd');
  }
  if (typeof v !== 'number') throw new JsonRequestError(`json: invalid value for ${field.type} field ${field.name}`);
  return v;
}

/** Plain object with protobufjs' camelCase names, ready for Type.fromObject. */
function objectFromJson(type: protobuf.Type, json: unknown, depth: number): Record<string, unknown> {
  if (depth > protobufDepthMax) throw new JsonDepthError('max depth exceeded');
  if (json === null || typeof json !== 'object' || Array.isArray(json)) {
    const kind = Array.isArray(json) ? 'array' : numberText(json) !== undefined ? 'number' : typeof json;
    throw new JsonRequestError(`json: cannot unmarshal ${kind} into ${type.name}`);
  }
  let index = indexes.get(type);
  if (index === undefined) indexes.set(type, (index = fieldIndex(type)));
  const out: Record<string, unknown> = {};
  for (const [key, v] of Object.entries(json as Record<string, unknown>)) {
    const field = index.get(key);
    if (field === undefined || v === null) continue;
    if (field.repeated) {
      if (!Array.isArray(v)) throw new JsonRequestError(`json: cannot unmarshal into repeated field ${key}`);
      out[field.name] = v.map((x) => scalarFromJson(field, x, depth));
    } else out[field.name] = scalarFromJson(field, v, depth);
  }
  return out;
}

/** A JSON value (already parsed) as a message of `type`, encoded to protobuf bytes. */
export function jsonToBytes(type: protobuf.Type, json: unknown): Buffer {
  let bytes: Uint8Array;
  try {
    bytes = type.encode(type.fromObject(objectFromJson(type, json, 0))).finish();
  } catch (err) {
    // Past our checks only nesting is left for protobufjs to refuse.
    if (err instanceof JsonRequestError || err instanceof AssertionError) throw err;
    if (isDepthError(err)) throw new JsonDepthError('max depth exceeded');
    throw new JsonRequestError((err as Error).message);
  }
  assert(bytes instanceof Uint8Array, 'protobufjs encode returned no bytes');
  return Buffer.from(bytes.buffer, bytes.byteOffset, bytes.length);
}
