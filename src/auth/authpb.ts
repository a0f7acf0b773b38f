/**
 * The stored form of users and roles: authpb.User and authpb.Role protobuf bytes, as etcd keeps them in its
 * authUsers / authRoles buckets, so a backend's auth buckets read the same as etcd's. Hand-written (this
 * directory imports no package): only the fields authpb has, in field order, defaults omitted.
 */
import { assert } from '../base/assert.js';
import { fromUtf8, ownedCopy, utf8 } from '../base/bytes.js';
import { PermType, type Permission, type Role, type User } from './types.js';

class Writer {
  readonly bytes: number[] = [];
  varint(n: number): void {
    assert(Number.isSafeInteger(n) && n >= 0, `varint ${n}`);
    while (n >= 0x80) {
      this.bytes.push((n % 0x80) | 0x80);
      n = Math.floor(n / 0x80);
    }
    this.bytes.push(n);
  }
  field(tag: number, data: Uint8Array): void {
    this.varint((tag << 3) | 2);
    this.varint(data.length);
    for (const b of data) this.bytes.push(b);
  }
  finish(): Uint8Array {
    return new Uint8Array(this.bytes);
  }
}

/** Reads fields of one message: (tag, wire type, value) with length-delimited values as subarrays. */
function* fields(b: Uint8Array): Generator<[number, number | Uint8Array]> {
  let pos = 0;
  const varint = (): number => {
    let result = 0;
    for (let scale = 1; ; scale *= 0x80) {
      assert(pos < b.length && scale < 2 ** 56, 'truncated auth record varint');
      const byte = b[pos++]!;
      result += (byte & 0x7f) * scale;
      if (byte < 0x80) return result;
    }
  };
  while (pos < b.length) {
    const key = varint();
    const wire = key & 7;
    const tag = key >>> 3;
    if (wire === 0) yield [tag, varint()];
    else {
      assert(wire === 2, `unexpected wire type ${wire} in an auth record`);
      const n = varint();
      assert(pos + n <= b.length, 'truncated auth record field');
      yield [tag, b.subarray(pos, pos + n)];
      pos += n;
    }
  }
}

const bytesOf = (v: number | Uint8Array): Uint8Array => {
  assert(v instanceof Uint8Array, 'expected a length-delimited field');
  return v;
};

export function encodeUser(u: User): Uint8Array {
  const w = new Writer();
  w.field(1, utf8(u.name));
  if (u.password !== '') w.field(2, utf8(u.password));
  for (const r of u.roles) w.field(3, utf8(r));
  // UserAddOptions{no_password = 1}: etcd always stores the options message.
  w.field(4, u.noPassword ? new Uint8Array([0x08, 0x01]) : new Uint8Array(0));
  return w.finish();
}

export function decodeUser(b: Uint8Array): User {
  const u: User = { name: '', password: '', roles: [], noPassword: false };
  for (const [tag, v] of fields(b)) {
    if (tag === 1) u.name = fromUtf8(bytesOf(v));
    else if (tag === 2) u.password = fromUtf8(bytesOf(v));
    else if (tag === 3) u.roles.push(fromUtf8(bytesOf(v)));
    else if (tag === 4) for (const [t, o] of fields(bytesOf(v))) if (t === 1) u.noPassword = o !== 0;
  }
  return u;
}

function encodePermission(p: Permission): Uint8Array {
  const w = new Writer();
  if (p.permType !== PermType.Read) (w.varint(1 << 3), w.varint(p.permType));
  if (p.key.length > 0) w.field(2, p.key);
  if (p.rangeEnd.length > 0) w.field(3, p.rangeEnd);
  return w.finish();
}

function decodePermission(b: Uint8Array): Permission {
  const p: Permission = { permType: PermType.Read, key: new Uint8Array(0), rangeEnd: new Uint8Array(0) };
  for (const [tag, v] of fields(b)) {
    if (tag === 1) {
      assert(v === 0 || v === 1 || v === 2, `unknown permission type ${String(v)}`);
      p.permType = v;
    } else if (tag === 2) p.key = ownedCopy(bytesOf(v));
    else if (tag === 3) p.rangeEnd = ownedCopy(bytesOf(v));
  }
  return p;
}

export function encodeRole(r: Role): Uint8Array {
  const w = new Writer();
  w.field(1, utf8(r.name));
  for (const p of r.keyPermission) w.field(2, encodePermission(p));
  return w.finish();
}

export function decodeRole(b: Uint8Array): Role {
  const r: Role = { name: '', keyPermission: [] };
  for (const [tag, v] of fields(b)) {
    if (tag === 1) r.name = fromUtf8(bytesOf(v));
    else if (tag === 2) r.keyPermission.push(decodePermission(bytesOf(v)));
  }
  return r;
}
