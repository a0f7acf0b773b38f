/**
 * The one msgpack codec of the server process: Raft entry payloads (requests, conf-change contexts) and
 * stored member records. Bigints (member, cluster and lease ids) round-trip as bigint; revisions and indexes
 * as numbers; bytes as Uint8Array (Buffer).
 */
import { Packr } from 'msgpackr';

const packr = new Packr({ useRecords: false, int64AsType: 'bigint', structuredClone: false });

export function pack(value: unknown): Uint8Array {
  return packr.pack(value);
}

export function unpack<T>(bytes: Uint8Array): T {
  return packr.unpack(bytes) as T;
}
