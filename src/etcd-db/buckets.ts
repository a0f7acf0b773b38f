/**
 * The buckets of an etcd snapshot and where their entries come from in our backend. Extensible: a new
 * bucket is one more entry in `snapshotBuckets` with its `entries` (export) and, when it must survive a
 * restore, its `restore` (import); the alarm and auth buckets are entries like any other (src/auth keeps users and
 * roles as etcd's authpb bytes, src/auth/authpb.ts). Buckets are written in name order (bbolt's root bucket is
 * a sorted tree), whatever the order here.
 */
import { utf8 } from '../base/bytes.js';
import type { BackendView, Bucket } from '../mvcc/backend.js';
import { unpack } from '../storage/entry-codec.js';
import { decodeMembersEntry } from '../storage/members-bucket.js';
import {
  bucketNames, clusterVersionKey, clusterVersionOf, encodeConfStateJson, encodeMemberJson, memberKey, metaKeys,
} from './schema.js';

export interface ExportContext {
  view: BackendView;
  /** The server's etcd version (e.g. "3.5.17"); the cluster bucket records its major.minor. */
  serverVersion: string;
}

export interface SnapshotBucket {
  name: string;
  /** The bucket's entries in etcd's encoding, ascending by key. */
  entries(ctx: ExportContext): AsyncIterable<[Uint8Array, Uint8Array]>;
  /**
   * Import from an etcd snapshot into our backend (absent: the bucket is not carried over, as `etcdctl
   * snapshot restore` drops members; key, lease and meta go through importRevisions instead).
   */
  restore?(entries: AsyncIterable<[Uint8Array, Uint8Array]>): AsyncIterable<{ bucket: Bucket; key: Uint8Array; value: Uint8Array }>;
}

/** etcd's meta keys we carry; anything else in our meta bucket is ours alone. */
const copiedMetaKeys = [metaKeys.consistentIndex, metaKeys.term, metaKeys.scheduledCompact, metaKeys.finishedCompact];

async function* sortedByKey(entries: Array<[Uint8Array, Uint8Array]>): AsyncIterable<[Uint8Array, Uint8Array]> {
  yield* entries.sort(([a], [b]) => Buffer.compare(a, b));
}

/** A few entries (members, meta): small enough to gather and sort. */
async function gather<T>(source: AsyncIterable<T>): Promise<T[]> {
  const out: T[] = [];
  for await (const x of source) out.push(x);
  return out;
}

/** Our 'members' bucket holds both; etcd splits members (JSON by hex id) and members_removed ("removed"). */
async function* membersEntries(view: BackendView, kind: 'member' | 'removed'): AsyncIterable<[Uint8Array, Uint8Array]> {
  const out: Array<[Uint8Array, Uint8Array]> = [];
  for (const [k, v] of await gather(view.scan('members'))) {
    const e = decodeMembersEntry(k, v);
    if (e.kind === 'member' && kind === 'member') out.push([memberKey(e.member.id), encodeMemberJson(e.member)]);
    if (e.kind === 'removed' && kind === 'removed') out.push([memberKey(e.id), utf8('removed')]);
  }
  yield* sortedByKey(out);
}

/** A bucket restored byte for byte into our bucket of the same layout. */
function carriedAs(bucket: Bucket): NonNullable<SnapshotBucket['restore']> {
  return async function* (entries) {
    for await (const [key, value] of entries) yield { bucket, key, value };
  };
}

export const snapshotBuckets: readonly SnapshotBucket[] = [
  { name: bucketNames.key, entries: ({ view }) => view.scan('key') },
  { name: bucketNames.lease, entries: ({ view }) => view.scan('lease') },
  // Alarms survive a restore, as with etcdctl's (it keeps the bucket; a NOSPACE cluster restored from its
  // backup still refuses writes until the alarm is disarmed). The keys are etcd's AlarmMember bytes.
  { name: bucketNames.alarm, entries: ({ view }) => view.scan('alarm'), restore: carriedAs('alarm') },
  {
    name: bucketNames.meta,
    entries: async function* ({ view }) {
      const out: Array<[Uint8Array, Uint8Array]> = [];
      for (const key of copiedMetaKeys) {
        const value = await view.get('meta', utf8(key));
        if (value !== undefined) out.push([utf8(key), value]);
      }
      const cs = await view.get('meta', utf8(metaKeys.confState));
      if (cs !== undefined) out.push([utf8(metaKeys.confState), encodeConfStateJson(unpack<{ voters: bigint[]; learners: bigint[] }>(cs))]);
      yield* sortedByKey(out);
    },
  },
  { name: bucketNames.members, entries: ({ view }) => membersEntries(view, 'member') },
  { name: bucketNames.membersRemoved, entries: ({ view }) => membersEntries(view, 'removed') },
  // Auth, byte for byte as etcd keeps it (our backend uses etcd's buckets and authpb records): a restore of an
  // auth-enabled cluster's backup, ours or etcd's, comes back with its users, roles, permissions, the enabled
  // flag and the auth revision (issue 21, item 1: it came back with auth off, and anonymous reads served).
  ...([['auth', bucketNames.auth], ['authUsers', bucketNames.authUsers], ['authRoles', bucketNames.authRoles]] as const).map(
    ([bucket, name]): SnapshotBucket => ({
      name,
      entries: ({ view }) => view.scan(bucket),
      restore: carriedAs(bucket),
    }),
  ),
  {
    name: bucketNames.cluster,
    entries: async function* ({ serverVersion }) {
      yield [utf8(clusterVersionKey), utf8(clusterVersionOf(serverVersion))];
    },
  },
];
