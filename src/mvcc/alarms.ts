/**
 * Alarms (etcd's server/etcdserver/api/v3alarm): NOSPACE and CORRUPT raised per member. Kept in memory for
 * the apply path's checks and persisted in the 'alarm' bucket through the shared WriteBuffer, so they are
 * flushed atomically with the entry that raised them. The bucket key is the AlarmMember protobuf, as etcd
 * stores it (field 1 memberID uint64, field 2 alarm enum), with an empty value.
 */
import { assert } from '../base/assert.js';
import type { Backend, WriteBuffer } from './backend.js';
import type { AlarmMember, AlarmType } from './types.js';

const alarmTypes: readonly AlarmType[] = ['NONE', 'NOSPACE', 'CORRUPT'];

export function encodeAlarmMember(m: AlarmMember): Uint8Array {
  const bytes: number[] = [];
  const varint = (n: bigint): void => {
    while (n >= 0x80n) {
      bytes.push(Number(n & 0x7fn) | 0x80);
      n >>= 7n;
    }
    bytes.push(Number(n));
  };
  const id = BigInt.asUintN(64, m.memberId);
  if (id !== 0n) (bytes.push(0x08), varint(id));
  const type = alarmTypes.indexOf(m.alarm);
  assert(type >= 0, `unknown alarm ${m.alarm}`);
  if (type !== 0) (bytes.push(0x10), varint(BigInt(type)));
  return new Uint8Array(bytes);
}

export function decodeAlarmMember(b: Uint8Array): AlarmMember {
  let pos = 0;
  const varint = (): bigint => {
    let result = 0n;
    for (let shift = 0n; ; shift += 7n) {
      assert(pos < b.length && shift < 70n, 'truncated alarm varint');
      const byte = b[pos++]!;
      result |= BigInt(byte & 0x7f) << shift;
      if (byte < 0x80) return result;
    }
  };
  const m: AlarmMember = { memberId: 0n, alarm: 'NONE' };
  while (pos < b.length) {
    const tag = Number(varint());
    if (tag === 0x08) m.memberId = varint();
    else if (tag === 0x10) m.alarm = alarmTypes[Number(varint())] ?? 'NONE';
    else assert(false, `unexpected alarm field tag ${tag}`);
  }
  return m;
}

export class AlarmStore {
  readonly #buffer: WriteBuffer;
  /** alarm type → member id → alarm. */
  readonly #alarms = new Map<AlarmType, Map<bigint, AlarmMember>>();

  private constructor(buffer: WriteBuffer) {
    this.#buffer = buffer;
  }

  static async load(backend: Backend, buffer: WriteBuffer): Promise<AlarmStore> {
    const store = new AlarmStore(buffer);
    for await (const [key] of backend.scan('alarm')) store.#add(decodeAlarmMember(key));
    return store;
  }

  #add(m: AlarmMember): AlarmMember {
    let byMember = this.#alarms.get(m.alarm);
    if (byMember === undefined) this.#alarms.set(m.alarm, (byMember = new Map()));
    const existing = byMember.get(m.memberId);
    if (existing !== undefined) return existing;
    byMember.set(m.memberId, m);
    return m;
  }

  /** Raise an alarm; returns it (the existing one when already raised), as etcd. */
  activate(memberId: bigint, alarm: AlarmType): AlarmMember {
    const m: AlarmMember = { memberId, alarm };
    const stored = this.#add(m);
    if (stored === m) this.#buffer.put('alarm', encodeAlarmMember(m), new Uint8Array(0));
    return { ...stored };
  }

  /** Clear an alarm; undefined when it was not raised. */
  deactivate(memberId: bigint, alarm: AlarmType): AlarmMember | undefined {
    const byMember = this.#alarms.get(alarm);
    const m = byMember?.get(memberId);
    if (m === undefined) return undefined;
    byMember!.delete(memberId);
    this.#buffer.del('alarm', encodeAlarmMember(m));
    return { ...m };
  }

  /** Raised alarms, of one type or (NONE / absent) of every type, ordered by type then member id. */
  list(alarm: AlarmType = 'NONE'): AlarmMember[] {
    const out: AlarmMember[] = [];
    for (const type of alarmTypes) {
      if (alarm !== 'NONE' && type !== alarm) continue;
      const byMember = this.#alarms.get(type);
      if (byMember === undefined) continue;
      const ids = [...byMember.keys()].sort((a, b) => (a < b ? -1 : a > b ? 1 : 0));
      for (const id of ids) out.push({ ...byMember.get(id)! });
    }
    return out;
  }
}
