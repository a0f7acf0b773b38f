/** Conversions between the etcd3 client's raw protobuf objects and the history's plain shapes. */
import type { IKeyValue, IEvent } from 'etcd3';
import type { Kv, WatchEvent } from './history.js';

export function toKv(kv: IKeyValue): Kv {
  return {
    key: kv.key.toString('utf8'),
    value: kv.value.toString('utf8'),
    modRev: Number(kv.mod_revision),
    createRev: Number(kv.create_revision),
    version: Number(kv.version),
    lease: String(kv.lease ?? '0'),
  };
}

export function toEvent(e: IEvent): WatchEvent {
  const ev: WatchEvent = { type: e.type === 'Delete' ? 'delete' : 'put', kv: toKv(e.kv) };
  if (e.prev_kv) ev.prevKv = toKv(e.prev_kv);
  return ev;
}

export function bytes(s: string): Buffer {
  return Buffer.from(s, 'utf8');
}

/** A gRPC deadline `ms` from now. */
export function deadline(ms: number): { deadline: number } {
  return { deadline: Date.now() + ms };
}
