/**
 * Where etcetera deliberately answers otherwise than etcd 3.4, by name. Each entry says why; each is listed in
 * the README ("Known differences"). An entry matches one operation's pair of outcomes, so everything else in the
 * same answer is still compared; a difference no entry names fails the test.
 */
import type { Op } from './ops.js';

type Outcome = Record<string, unknown>;

export interface Allowance {
  name: string;
  why: string;
  matches(op: Op, etcd: Outcome, ours: Outcome): boolean;
}

const call = (op: Op, method: string): boolean => op.k === 'call' && op.method === method;

/** `ours` equals `etcd` once `fields` are taken out of ours' answer body. */
function sameWithout(etcd: Outcome, ours: Outcome, fields: string[]): boolean {
  const ok = ours.ok as Record<string, unknown> | undefined;
  if (ok === undefined) return false;
  const rest = Object.fromEntries(Object.entries(ok).filter(([k]) => !fields.includes(k)));
  return JSON.stringify({ ...ours, ok: rest }) === JSON.stringify(etcd);
}

/** Copies `v` with every object passed through `f`, depth first. */
function mapObjects(v: unknown, f: (o: Record<string, unknown>) => Record<string, unknown>): unknown {
  if (Array.isArray(v)) return v.map((x) => mapObjects(x, f));
  if (v === null || typeof v !== 'object') return v;
  return f(Object.fromEntries(Object.entries(v).map(([k, x]) => [k, mapObjects(x, f)])));
}

const compactedReason = 'etcdserver: mvcc: required revision has been compacted';

export const allowList: Allowance[] = [
  {
    name: 'nested-txn-permissions-checked',
    why: "etcd 3.4.23 checks a Txn's permissions on its compares and its own ops only, not inside nested Txns (fixed " +
      'upstream later); we check every nested op too, so a user can reach only what its roles allow.',
    matches: (op, etcd, ours) =>
      call(op, 'Txn') && op.k === 'call' && JSON.stringify(op.req).includes('"requestTxn"') &&
      etcd.ok !== undefined && ours.code === 7 && ours.details === 'etcdserver: permission denied',
  },
  {
    name: 'hashkv-at-compact-revision-is-3.5',
    why: 'HashKV at exactly the compact revision: etcd 3.4 refuses it as compacted (rev <= compactRev), 3.5 hashes the ' +
      'state kept there (rev < compactRev refused), as we do, so hashes taken at a compaction can be compared.',
    matches: (op, etcd, ours) =>
      call(op, 'HashKV') && etcd.code === 11 && (ours.ok as Outcome | undefined)?.compactRevision === (ours.ok as Outcome | undefined)?.hashRevision,
  },
  {
    name: 'progress-without-watchers-is-3.5',
    why: 'etcd 3.4 answers RequestProgress on a stream with no watchers; 3.5 (after etcd #15220) answers only through a ' +
      "stream's watchers, so none comes, as here.",
    matches: (op, etcd, ours) => op.k === 'progress' && etcd.liveWatchers === 0 && ours.liveWatchers === 0 && ours.answer === 'none',
  },
  {
    name: 'watch-compacted-cancel-reason',
    why: 'A watch canceled because its start was compacted carries cancel_reason "' + compactedReason + '" here; ' +
      'etcd sets only compact_revision (clients such as the etcd3 npm package show cancel_reason in their error).',
    matches: (op, etcd, ours) =>
      op.k === 'watchLog' &&
      JSON.stringify(etcd) === JSON.stringify(mapObjects(ours, (o) => {
        if (o.canceled !== true || o.compactRevision === undefined || o.cancelReason !== compactedReason) return o;
        const { cancelReason: _r, ...rest } = o;
        return rest;
      })),
  },
  {
    name: 'gateway-hashkv-path-is-3.5',
    why: "etcd 3.4's gateway maps HashKV to /v3/maintenance/hash (Hash's path too), so its /v3/maintenance/hashkv is 404; 3.5 serves HashKV there, as we do.",
    matches: (op, etcd) => call(op, 'HashKV') && op.k === 'call' && op.via === 'gateway' && etcd.status === 404,
  },
  {
    name: 'alarm-header-is-3.5',
    why: "etcd 3.4's Maintenance.Alarm answers without a response header; 3.5 fills it (ids, term, revision) as we do.",
    matches: (op, etcd, ours) => call(op, 'Alarm') && (etcd.ok as Outcome | undefined)?.header === undefined && sameWithout(etcd, ours, ['header']),
  },
  {
    name: 'hashkv-hash-revision-is-3.5',
    why: "HashKV's hash_revision (the revision the hash covers) is a 3.5 field; 3.4 has no such field.",
    matches: (op, etcd, ours) => call(op, 'HashKV') && sameWithout(etcd, ours, ['hashRevision']),
  },
  {
    name: 'auth-status-is-3.5',
    why: 'Auth.AuthStatus is a 3.5 call: etcd 3.4 answers Unimplemented, we answer it as 3.5 does (we report 3.5).',
    matches: (op, etcd) => call(op, 'AuthStatus') && etcd.code === 12,
  },
];

export function allowed(op: Op, etcd: Outcome, ours: Outcome): Allowance | undefined {
  return allowList.find((a) => a.matches(op, etcd, ours));
}
