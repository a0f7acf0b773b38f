/**
 * The operations of the server-level differential test, as data: what the generator (gen.ts) emits and each
 * side (side.ts) runs. Requests are written in the gateway's JSON shape (camelCase names, bytes as base64,
 * 64-bit integers as strings) with placeholders for what only a side knows: a revision relative to the
 * side's current or compact revision, a lease by the handle it was granted under, the side's member id.
 * Both sides resolve the same placeholders to the same values while they agree, so the first divergence
 * shows in the first answer that differs.
 */

/** A revision relative to the side's last header revision ('now') or its compact revision. */
export interface RevRef {
  $rev: 'now' | 'compact';
  delta: number;
  /** Floor of the result: a watch's start below 1 is a different case on each server (see the report of issue 35). */
  atLeast?: number;
}
/** A lease by the handle of the sequence's grant that created it (ids granted without one are random). */
export interface LeaseRef {
  $lease: string;
}
/** The side's own member id (alarms name it). */
export interface MemberRef {
  $member: 'self';
}

export type Json = null | boolean | number | string | Json[] | { [k: string]: Json } | RevRef | LeaseRef | MemberRef;
export type Req = { [k: string]: Json };

/** Which token a call carries: none, the last one `authenticate` got for that user, or a made-up one. */
export type Caller = 'none' | 'root' | 'user' | 'bogus';

export type Service = 'KV' | 'Lease' | 'Maintenance' | 'Cluster' | 'Auth';

export type Op =
  | { k: 'call'; via: 'grpc' | 'gateway'; service: Service; method: string; req: Req; as?: Caller; grant?: string }
  | { k: 'authenticate'; user: 'root' | 'user'; password: string }
  | { k: 'keepAlive'; lease: LeaseRef }
  | { k: 'watch'; stream: number; create: Req }
  | { k: 'cancelWatch'; stream: number; watchId: number }
  | { k: 'progress'; stream: number }
  /** Writes to every open watcher's key until each has seen a revision past the writes before (see side.ts). */
  | { k: 'syncWatches' }
  /** The event log of every stream so far, per watch id. */
  | { k: 'watchLog' }
  | { k: 'closeWatches' };

export const b64 = (s: string): string => Buffer.from(s, 'latin1').toString('base64');
export const rev = ($rev: RevRef['$rev'], delta: number, atLeast?: number): RevRef => ({ $rev, delta, ...(atLeast === undefined ? {} : { atLeast }) });
export const lease = (handle: string): LeaseRef => ({ $lease: handle });
