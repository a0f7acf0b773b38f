/**
 * A minimal static protobuf codec for the few etcd v3 messages the load generator sends and reads: Put, Range,
 * Txn (puts only), Status, Watch. Hand-rolled so the generator spends its single thread on load, not on
 * reflection-based encoding (protobufjs) or the etcd3 client's per-call wrappers. Field numbers are those of
 * protos/etcd/api/etcdserverpb/rpc.proto and mvccpb/kv.proto.
 *
 * Decoding skips every field it does not need; int64/uint64 fields are read as JS numbers (revisions, terms and
 * counts stay far below 2^53 in a benchmark; member ids are not decoded as numbers).
 */

export class Writer {
  #buf: Buffer;
  #pos = 0;

  constructor(capacity = 256) {
    this.#buf = Buffer.allocUnsafe(capacity);
  }

  #ensure(n: number): void {
    if (this.#pos + n <= this.#buf.length) return;
    const next = Buffer.allocUnsafe(Math.max(this.#buf.length * 2, this.#pos + n));
    this.#buf.copy(next, 0, 0, this.#pos);
    this.#buf = next;
  }

  varint(v: number): this {
    this.#ensure(10);
    while (v > 0x7f) {
      this.#buf[this.#pos++] = (v % 128) | 0x80;
      v = Math.floor(v / 128);
    }
    this.#buf[this.#pos++] = v;
    return this;
  }

  tag(field: number, wireType: 0 | 2): this {
    return this.varint(field * 8 + wireType);
  }

  uint(field: number, v: number): this {
    if (v === 0) return this;
    return this.tag(field, 0).varint(v);
  }

  bool(field: number, v: boolean): this {
    return v ? this.tag(field, 0).varint(1) : this;
  }

  bytes(field: number, b: Uint8Array): this {
    this.tag(field, 2).varint(b.length);
    this.#ensure(b.length);
    this.#buf.set(b, this.#pos);
    this.#pos += b.length;
    return this;
  }

  /** An embedded message, written by `fill` into a fresh writer (sizes are small; no length back-patching). */
  message(field: number, fill: (w: Writer) => void): this {
    const inner = new Writer(64);
    fill(inner);
    return this.bytes(field, inner.finish());
  }

  finish(): Buffer {
    return this.#buf.subarray(0, this.#pos);
  }
}

export class Reader {
  readonly buf: Buffer;
  pos: number;
  readonly end: number;

  constructor(buf: Buffer, start = 0, end = buf.length) {
    this.buf = buf;
    this.pos = start;
    this.end = end;
  }

  done(): boolean {
    return this.pos >= this.end;
  }

  varint(): number {
    let result = 0;
    let mul = 1;
    for (let i = 0; i < 10; i++) {
      const b = this.buf[this.pos++];
      if (b === undefined) throw new Error('truncated varint');
      result += (b & 0x7f) * mul;
      if (b < 0x80) return result;
      mul *= 128;
    }
    throw new Error('varint too long');
  }

  /** Reads a tag; returns [field, wireType]. */
  tag(): [number, number] {
    const t = this.varint();
    return [Math.floor(t / 8), t & 7];
  }

  /** A length-delimited field as a sub-reader (no copy). */
  sub(): Reader {
    const len = this.varint();
    const start = this.pos;
    this.pos += len;
    if (this.pos > this.end) throw new Error('truncated length-delimited field');
    return new Reader(this.buf, start, this.pos);
  }

  skip(wireType: number): void {
    if (wireType === 0) this.varint();
    else if (wireType === 2) {
      const len = this.varint(); // read first: `pos += varint()` would add to the pos before the length
      this.pos += len;
    }
    else if (wireType === 1) this.pos += 8;
    else if (wireType === 5) this.pos += 4;
    else throw new Error(`unsupported wire type ${wireType}`);
  }
}

export interface Header {
  revision: number;
  raftTerm: number;
}

function decodeHeader(r: Reader): Header {
  const h: Header = { revision: 0, raftTerm: 0 };
  while (!r.done()) {
    const [f, wt] = r.tag();
    if (f === 3 && wt === 0) h.revision = r.varint();
    else if (f === 4 && wt === 0) h.raftTerm = r.varint();
    else r.skip(wt);
  }
  return h;
}

// ---- requests

export function encodePut(key: Uint8Array, value: Uint8Array): Buffer {
  return new Writer(key.length + value.length + 16).bytes(1, key).bytes(2, value).finish();
}

export interface RangeOptions {
  rangeEnd?: Uint8Array;
  limit?: number;
  serializable?: boolean;
  countOnly?: boolean;
}

export function encodeRange(key: Uint8Array, o: RangeOptions = {}): Buffer {
  const w = new Writer(key.length + 32).bytes(1, key);
  if (o.rangeEnd) w.bytes(2, o.rangeEnd);
  w.uint(3, o.limit ?? 0).bool(7, o.serializable ?? false).bool(9, o.countOnly ?? false);
  return w.finish();
}

/** A Txn with no compares whose success branch is the given puts (for bulk loading). */
export function encodeTxnPuts(puts: readonly (readonly [Uint8Array, Uint8Array])[]): Buffer {
  const w = new Writer(1024);
  for (const [k, v] of puts) w.message(2, (op) => op.bytes(2, encodePut(k, v)));
  return w.finish();
}

export const emptyMessage = Buffer.alloc(0);

export function encodeWatchCreate(key: Uint8Array, rangeEnd?: Uint8Array): Buffer {
  return new Writer(64)
    .message(1, (c) => {
      c.bytes(1, key);
      if (rangeEnd) c.bytes(2, rangeEnd);
    })
    .finish();
}

// ---- responses

/** Put and Txn responses: only the header matters here. */
export function decodeHeaderOnly(buf: Buffer): Header {
  const r = new Reader(buf);
  while (!r.done()) {
    const [f, wt] = r.tag();
    if (f === 1 && wt === 2) return decodeHeader(r.sub());
    r.skip(wt);
  }
  return { revision: 0, raftTerm: 0 };
}

export interface RangeResult {
  header: Header;
  kvs: number;
  valueBytes: number;
  count: number;
}

export function decodeRange(buf: Buffer): RangeResult {
  const r = new Reader(buf);
  const out: RangeResult = { header: { revision: 0, raftTerm: 0 }, kvs: 0, valueBytes: 0, count: 0 };
  while (!r.done()) {
    const [f, wt] = r.tag();
    if (f === 1 && wt === 2) out.header = decodeHeader(r.sub());
    else if (f === 2 && wt === 2) {
      out.kvs++;
      const kv = r.sub(); // its length is enough; contents are not inspected
      out.valueBytes += kv.end - kv.pos;
    } else if (f === 4 && wt === 0) out.count = r.varint();
    else r.skip(wt);
  }
  return out;
}

export interface StatusResult {
  header: Header;
  leader: string;
  memberId: string;
  raftTerm: number;
  raftIndex: number;
  /** Backend size on disk (etcd: the bbolt file; etcetera: LevelDB's live ranges). */
  dbSize: number;
}

function decodeMemberIdHeader(r: Reader): string {
  while (!r.done()) {
    const [f, wt] = r.tag();
    if (f === 2 && wt === 0) return readUint64String(r);
    r.skip(wt);
  }
  return '0';
}

/** A uint64 as a decimal string, exact (member ids use all 64 bits). */
function readUint64String(r: Reader): string {
  let result = 0n;
  let shift = 0n;
  for (let i = 0; i < 10; i++) {
    const b = r.buf[r.pos++];
    if (b === undefined) throw new Error('truncated varint');
    result |= BigInt(b & 0x7f) << shift;
    if (b < 0x80) return result.toString();
    shift += 7n;
  }
  throw new Error('varint too long');
}

export function decodeStatus(buf: Buffer): StatusResult {
  const r = new Reader(buf);
  const out: StatusResult = { header: { revision: 0, raftTerm: 0 }, leader: '0', memberId: '0', raftTerm: 0, raftIndex: 0, dbSize: 0 };
  while (!r.done()) {
    const [f, wt] = r.tag();
    if (f === 1 && wt === 2) {
      const sub = r.sub();
      out.header = decodeHeader(new Reader(sub.buf, sub.pos, sub.end));
      out.memberId = decodeMemberIdHeader(sub);
    } else if (f === 3 && wt === 0) out.dbSize = r.varint();
    else if (f === 4 && wt === 0) out.leader = readUint64String(r);
    else if (f === 5 && wt === 0) out.raftIndex = r.varint();
    else if (f === 6 && wt === 0) out.raftTerm = r.varint();
    else r.skip(wt);
  }
  return out;
}

export interface WatchResult {
  watchId: number;
  created: boolean;
  canceled: boolean;
  /** The value of every event, as a view into the response buffer. */
  values: Buffer[];
}

function eventValue(r: Reader): Buffer | undefined {
  while (!r.done()) {
    const [f, wt] = r.tag();
    if (f === 2 && wt === 2) {
      const kv = r.sub();
      while (!kv.done()) {
        const [kf, kwt] = kv.tag();
        if (kf === 5 && kwt === 2) {
          const v = kv.sub();
          return v.buf.subarray(v.pos, v.end);
        }
        kv.skip(kwt);
      }
      return Buffer.alloc(0);
    }
    r.skip(wt);
  }
  return undefined;
}

export function decodeWatch(buf: Buffer): WatchResult {
  const r = new Reader(buf);
  const out: WatchResult = { watchId: 0, created: false, canceled: false, values: [] };
  while (!r.done()) {
    const [f, wt] = r.tag();
    if (f === 2 && wt === 0) out.watchId = r.varint();
    else if (f === 3 && wt === 0) out.created = r.varint() !== 0;
    else if (f === 4 && wt === 0) out.canceled = r.varint() !== 0;
    else if (f === 11 && wt === 2) {
      const v = eventValue(r.sub());
      if (v) out.values.push(v);
    } else r.skip(wt);
  }
  return out;
}
