/**
 * Hand-written protobuf encoders for the two hot responses: RangeResponse (lists) and WatchResponse (event
 * streams). Two passes, size then write, into one exact Buffer: no intermediate wire objects, no fork/ldelim,
 * no Long per field. The output is byte-identical to protobufjs encoding the objects messages.ts builds (a test
 * checks it on random messages), so the grpc-js serializer passes it through untouched.
 *
 * Field numbers are etcd's (rpc.proto, kv.proto). Zero, false and empty fields are left out, as everywhere.
 */
import { assertSafeInteger } from '../../base/assert.js';
import type { Event, KeyValue, RangeResponse } from '../../mvcc/types.js';
import type { ResponseHeader, WatchOut } from '../../node/server-api.js';

// ---- sizes ----

function varintBytes(n: number): number {
  if (n < 0x80) return 1;
  if (n < 0x4000) return 2;
  if (n < 0x200000) return 3;
  if (n < 0x10000000) return 4;
  let bytes = 4;
  n = Math.floor(n / 0x10000000);
  while (n > 0) {
    bytes++;
    n = Math.floor(n / 0x80);
  }
  return bytes;
}

/** The two 32-bit halves of an int64/uint64 (two's complement), as unsigned numbers. */
function halves(v: bigint): [number, number] {
  const u = BigInt.asUintN(64, v);
  return [Number(u & 0xffffffffn), Number(u >> 32n)];
}

/** int64/uint64 as protobuf writes it: negatives take 10 bytes (two's complement, 64 bits). */
function bigVarintBytes(v: bigint): number {
  const [lo, hi] = halves(v);
  if (hi === 0) return varintBytes(lo);
  return Math.ceil((64 - Math.clz32(hi)) / 7);
}

const numField = (n: number): number => (n === 0 ? 0 : 1 + varintBytes(n));
const bigField = (v: bigint): number => (v === 0n ? 0 : 1 + bigVarintBytes(v));
const bytesField = (b: Uint8Array): number => (b.length === 0 ? 0 : 1 + varintBytes(b.length) + b.length);
const messageField = (size: number): number => 1 + varintBytes(size) + size;

function headerSize(h: ResponseHeader): number {
  assertSafeInteger(h.revision, 'header.revision');
  assertSafeInteger(h.raftTerm, 'header.raftTerm');
  return bigField(h.clusterId) + bigField(h.memberId) + numField(h.revision) + numField(h.raftTerm);
}

function keyValueSize(kv: KeyValue): number {
  return (
    bytesField(kv.key) +
    numField(kv.createRevision) +
    numField(kv.modRevision) +
    numField(kv.version) +
    bytesField(kv.value) +
    bigField(kv.lease)
  );
}

function eventSize(e: Event): number {
  let size = e.type === 0 ? 0 : 2;
  size += messageField(keyValueSize(e.kv));
  if (e.prevKv) size += messageField(keyValueSize(e.prevKv));
  return size;
}

// ---- writing ----

class Out {
  readonly buf: Buffer;
  pos = 0;
  constructor(size: number) {
    this.buf = Buffer.allocUnsafe(size);
  }

  varint(n: number): void {
    const buf = this.buf;
    while (n >= 0x80) {
      buf[this.pos++] = (n % 0x80) | 0x80;
      n = Math.floor(n / 0x80);
    }
    buf[this.pos++] = n;
  }

  bigVarint(v: bigint): void {
    let [lo, hi] = halves(v);
    const buf = this.buf;
    while (hi !== 0) {
      buf[this.pos++] = (lo & 0x7f) | 0x80;
      lo = ((lo >>> 7) | (hi << 25)) >>> 0;
      hi >>>= 7;
    }
    this.varint(lo);
  }

  num(tag: number, n: number): void {
    if (n === 0) return;
    this.buf[this.pos++] = tag;
    this.varint(n);
  }

  big(tag: number, v: bigint): void {
    if (v === 0n) return;
    this.buf[this.pos++] = tag;
    this.bigVarint(v);
  }

  bytes(tag: number, b: Uint8Array): void {
    if (b.length === 0) return;
    this.buf[this.pos++] = tag;
    this.varint(b.length);
    this.buf.set(b, this.pos);
    this.pos += b.length;
  }

  message(tag: number, size: number): void {
    this.buf[this.pos++] = tag;
    this.varint(size);
  }
}

function writeHeader(out: Out, h: ResponseHeader): void {
  out.big(0x08, h.clusterId);
  out.big(0x10, h.memberId);
  out.num(0x18, h.revision);
  out.num(0x20, h.raftTerm);
}

function writeKeyValue(out: Out, kv: KeyValue): void {
  out.bytes(0x0a, kv.key);
  out.num(0x10, kv.createRevision);
  out.num(0x18, kv.modRevision);
  out.num(0x20, kv.version);
  out.bytes(0x2a, kv.value);
  out.big(0x30, kv.lease);
}

function checkKeyValue(kv: KeyValue): void {
  assertSafeInteger(kv.createRevision, 'createRevision');
  assertSafeInteger(kv.modRevision, 'modRevision');
  assertSafeInteger(kv.version, 'version');
}

/** etcdserverpb.RangeResponse { header = 1; kvs = 2; more = 3; count = 4 }. */
export function encodeRangeResponse(r: RangeResponse, header: ResponseHeader): Buffer {
  assertSafeInteger(r.count, 'count');
  const hSize = headerSize(header);
  const kvSizes = r.kvs.map((kv) => {
    checkKeyValue(kv);
    return keyValueSize(kv);
  });
  let size = messageField(hSize) + (r.more ? 2 : 0) + numField(r.count);
  for (const s of kvSizes) size += messageField(s);
  const out = new Out(size);
  out.message(0x0a, hSize);
  writeHeader(out, header);
  for (let i = 0; i < r.kvs.length; i++) {
    out.message(0x12, kvSizes[i]!);
    writeKeyValue(out, r.kvs[i]!);
  }
  if (r.more) out.num(0x18, 1);
  out.num(0x20, r.count);
  return out.buf;
}

/**
 * etcdserverpb.WatchResponse { header = 1; watch_id = 2; created = 3; canceled = 4; compact_revision = 5;
 * cancel_reason = 6; fragment = 7; events = 11 }. watch_id may be -1 (int64: ten bytes).
 */
export function encodeWatchResponse(w: WatchOut, header: ResponseHeader): Buffer {
  const hSize = headerSize(header);
  const reason = w.cancelReason.length === 0 ? new Uint8Array(0) : Buffer.from(w.cancelReason, 'utf8');
  const eventSizes = w.events.map((e) => {
    checkKeyValue(e.kv);
    if (e.prevKv) checkKeyValue(e.prevKv);
    return eventSize(e);
  });
  assertSafeInteger(w.compactRevision, 'compactRevision');
  let size = messageField(hSize) + bigField(BigInt(w.watchId)) + (w.created ? 2 : 0) + (w.canceled ? 2 : 0);
  size += numField(w.compactRevision) + bytesField(reason) + (w.fragment ? 2 : 0);
  for (const s of eventSizes) size += messageField(s);
  const out = new Out(size);
  out.message(0x0a, hSize);
  writeHeader(out, header);
  out.big(0x10, BigInt(w.watchId));
  if (w.created) out.num(0x18, 1);
  if (w.canceled) out.num(0x20, 1);
  out.num(0x28, w.compactRevision);
  out.bytes(0x32, reason);
  if (w.fragment) out.num(0x38, 1);
  for (let i = 0; i < w.events.length; i++) {
    const e = w.events[i]!;
    out.message(0x5a, eventSizes[i]!);
    if (e.type !== 0) out.num(0x08, e.type);
    out.message(0x12, keyValueSize(e.kv));
    writeKeyValue(out, e.kv);
    if (e.prevKv) {
      out.message(0x1a, keyValueSize(e.prevKv));
      writeKeyValue(out, e.prevKv);
    }
  }
  return out.buf;
}
