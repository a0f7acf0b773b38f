/**
 * The one msgpack codec of the server process: Raft entry payloads (requests, conf-change contexts) and
 * stored member records. Bigints (member, cluster and lease ids) round-trip as bigint; revisions and indexes
 * as numbers; bytes as Uint8Array (Buffer).
 */
import { Packr } from 'msgpackr';
import { ownedCopy } from '../base/bytes.js';

const packr = new Packr({ useRecords: false, int64AsType: 'bigint', structuredClone: false });

/**
 * The bytes are copied out of msgpackr's pack buffer, which is shared by every Packr in the process and
 * grows to the largest value ever packed: a Raft entry kept in the in-memory log must not pin it.
 */
export function pack(value: unknown): Uint8Array {
  return ownedCopy(packr.pack(value));
}

export function unpack<T>(bytes: Uint8Array): T {
  return packr.unpack(bytes) as T;
}
