/**
 * Build a fresh data directory from revision records, like `etcdctl snapshot restore`: the store holds every
 * record at its own revision (lease ids and the compaction kept), and the member belongs to a new cluster
 * made from `--initial-cluster` (ids derived as a static bootstrap derives them, so every member restored
 * with the same flags agrees). As etcd's restore does, the store is at a restore point (src/node/apply/
 * restore-point.ts): the member list and consistent index = member count are in the backend, and the log
 * starts with a snapshot record at that index, so a member that joins later receives the store as a
 * snapshot instead of replaying a log that never held the data. Started with `etcetera server --data-dir D`.
 *
 * `<data-dir>/token` is the cluster token, the secret the restored members' peers authenticate with.
 * Built in `<data-dir>/member.restoring`, made durable, then renamed to `member`: a crash part-way never
 * leaves something that looks like a member.
 */
import { mkdir, readdir, rename, rm, stat } from 'node:fs/promises';
import { join, resolve } from 'node:path';
import { assert } from '../base/assert.js';
import type { Backend, BatchOp } from '../mvcc/backend.js';
import { encodeLeaseRecord, leaseKey, type LeaseRecord } from '../mvcc/lease-codec.js';
import { LevelBackend } from '../storage/level-backend.js';
import { revisionToBytes } from '../mvcc/revision.js';
import { writeFileDurably, writeIdentity } from '../storage/identity.js';
import { staticCluster } from '../node/membership/new-cluster.js';
import { restorePointMeta, restorePointOps } from '../node/apply/restore-point.js';
import { walDirInsideMember, walDirWhileBuilding } from '../storage/wal-dir.js';
import { NodeFsPort } from '../wal/fs-port.js';
import { Wal, type SaveRequest } from '../wal/wal.js';
import type { Member } from '../node/api-types.js';
import { utf8 } from '../base/bytes.js';
import { metaKeys } from '../etcd-db/schema.js';
import { RestoreError } from '../etcd-db/etcd-db-file.js';
import { recordToEntry, type RevisionRecord } from './revision-record.js';

/** Directories only this user may enter, as etcd's fileutil.PrivateDirMode. */
const privateDirMode = 0o700;
/** Backend ops per batch while importing. */
const importBatchOpsMax = 1000;

export interface RestoreCluster {
  /** This member's name (etcd's --name, default "default"). */
  name: string;
  /** Every member of the new cluster (etcd's --initial-cluster). */
  initialCluster: Array<{ name: string; peerUrls: string[] }>;
  /** etcd's --initial-cluster-token (default "etcd-cluster"). */
  clusterToken: string;
  /** etcd's --initial-advertise-peer-urls: must be this member's URLs in initialCluster when given. */
  initialAdvertisePeerUrls?: string[];
}

export interface ImportExtras {
  cluster: RestoreCluster;
  leases?: Iterable<LeaseRecord> | AsyncIterable<LeaseRecord>;
  /** The compaction the source had done (scheduled = finished); 0 or absent: none. */
  compactRevision?: number;
  /** Other backend entries to carry over as they are (buckets an importer knows how to translate). */
  raw?: AsyncIterable<BatchOp & { type: 'put' }>;
  /** Called every 10,000 records with the count so far. */
  onProgress?: (records: number) => void;
  /** etcd's --wal-dir: the log's directory when not `<data-dir>/member/wal` (inside the data directory or not). */
  walDir?: string;
}

export interface ImportResult {
  memberId: bigint;
  clusterId: bigint;
  /** The highest revision imported (the store's revision once served). */
  revision: number;
  records: number;
  leases: number;
}


export { RestoreError };

export async function importRevisions(
  dataDir: string,
  records: Iterable<RevisionRecord> | AsyncIterable<RevisionRecord>,
  extras: ImportExtras,
): Promise<ImportResult> {
  const { members, clusterId, self } = newCluster(extras.cluster);
  const memberDir = join(dataDir, 'member');
  if (await exists(memberDir)) throw new RestoreError(`data-dir ${JSON.stringify(dataDir)} exists (it holds a member already)`);
  const work = join(dataDir, 'member.restoring');
  const walDir = walDirWhileBuilding(dataDir, extras.walDir, work);
  if (extras.walDir !== undefined && !walDirInsideMember(dataDir, extras.walDir) && (await readdir(walDir).catch(() => [] as string[])).some((n) => n.endsWith('.wal'))) {
    throw new RestoreError(`--wal-dir ${JSON.stringify(walDir)} holds a log already`);
  }
  await rm(work, { recursive: true, force: true });
  // Private as etcdutl makes them (0700): LevelDB and the log would create theirs 0777 less the umask, which
  // left member/db, member/wal and an outside --wal-dir readable by every local user (the CLI has no umask
  // of its own; the server's is 077). An existing --wal-dir keeps its mode (the server warns about it).
  await mkdir(work, { recursive: true, mode: privateDirMode });
  await mkdir(join(work, 'db'), { mode: privateDirMode });
  await mkdir(walDir, { recursive: true, mode: privateDirMode });
  const backend = await LevelBackend.open(join(work, 'db'));
  let result: Omit<ImportResult, 'memberId' | 'clusterId'>;
  try {
    // A --wal-dir outside the data directory is written in place: it cannot move with the rename below.
    const { wal } = await Wal.open(walDir, { profile: 'ssd' });
    try {
      result = await restoreInto({ backend, wal }, members, records, extras);
    } finally {
      await wal.close();
    }
  } finally {
    await backend.close();
  }
  await writeIdentity(work, { memberId: self.id, clusterId, name: extras.cluster.name, joinPeers: [], ...(extras.walDir !== undefined ? { walDir: resolve(extras.walDir) } : {}) });
  // Peers authenticate with the join token; a static bootstrap uses the cluster token, and so must every
  // member restored together (whatever flags they are later started with).
  const tokenFile = join(dataDir, 'token');
  if (!(await exists(tokenFile))) await writeFileDurably(dataDir, 'token', `${extras.cluster.clusterToken}\n`);
  await rename(work, memberDir);
  await new NodeFsPort().syncDir(dataDir);
  return { ...result, memberId: self.id, clusterId };
}

/** Where a restore writes: the new member's backend and log (the simulator passes its memory backend and simulated disk). */
export interface RestoreTarget {
  backend: Backend;
  wal: { save(request: SaveRequest): Promise<void> };
}

/**
 * The restore proper, on any backend and log: the records, then the restore point (members, configuration,
 * consistent index) synced in the backend, then the log's snapshot record at that point.
 */
export async function restoreInto(
  target: RestoreTarget,
  members: Member[],
  records: Iterable<RevisionRecord> | AsyncIterable<RevisionRecord>,
  extras: Omit<ImportExtras, 'cluster'>,
): Promise<Omit<ImportResult, 'memberId' | 'clusterId'>> {
  const point = restorePointMeta(members);
  const result = await writeData(target.backend, records, extras);
  // Last, so nothing carried over from the source can name another index or member list.
  await target.backend.write(restorePointOps(members, point), { sync: true });
  await target.wal.save({ hardState: { term: point.term, vote: 0n, commit: point.index }, snapshotMeta: point });
  return result;
}

function newCluster(c: RestoreCluster): ReturnType<typeof staticCluster> & { self: ReturnType<typeof staticCluster>['members'][number] } {
  if (c.initialCluster.length === 0) throw new RestoreError('--initial-cluster is empty');
  const { members, clusterId } = staticCluster(c.initialCluster, c.clusterToken);
  const self = members.find((m) => m.name === c.name);
  if (self === undefined) throw new RestoreError(`--initial-cluster has no member named ${JSON.stringify(c.name)}`);
  const advertised = c.initialAdvertisePeerUrls;
  if (advertised !== undefined && advertised.length > 0 && [...advertised].sort().join(',') !== [...self.peerUrls].sort().join(',')) {
    throw new RestoreError(`--initial-advertise-peer-urls (${advertised.join(',')}) do not match the URLs of ${c.name} in --initial-cluster (${self.peerUrls.join(',')})`);
  }
  return { members, clusterId, self };
}

async function writeData(
  backend: Backend,
  records: Iterable<RevisionRecord> | AsyncIterable<RevisionRecord>,
  extras: Omit<ImportExtras, 'cluster'>,
): Promise<Omit<ImportResult, 'memberId' | 'clusterId'>> {
  let batch: BatchOp[] = [];
  // One batch in flight while the next is gathered: LevelDB writes on its own thread meanwhile.
  let inFlight: Promise<void> = Promise.resolve();
  const put = async (op: BatchOp): Promise<void> => {
    batch.push(op);
    if (batch.length >= importBatchOpsMax) {
      const full = batch;
      batch = [];
      await inFlight;
      inFlight = backend.write(full);
      inFlight.catch(() => {}); // awaited before the next batch or at the end; never left unhandled meanwhile
    }
  };
  let count = 0;
  let lastMain = 0;
  let sub = 0;
  for await (const r of records) {
    if (!Number.isSafeInteger(r.modRevision) || r.modRevision < 1) throw new RestoreError(`record with a bad revision ${r.modRevision}`);
    if (r.modRevision < lastMain) throw new RestoreError(`records out of order: revision ${r.modRevision} after ${lastMain}`);
    sub = nextSub(r, r.modRevision === lastMain ? sub : undefined);
    lastMain = r.modRevision;
    const [key, value] = recordToEntry(r, sub);
    await put({ type: 'put', bucket: 'key', key, value });
    if (++count % 10_000 === 0) extras.onProgress?.(count);
  }
  let leases = 0;
  for await (const l of extras.leases ?? []) {
    assert(l.id !== 0n, 'lease id 0 is not a lease');
    await put({ type: 'put', bucket: 'lease', key: leaseKey(l.id), value: encodeLeaseRecord(l) });
    leases++;
  }
  const compact = extras.compactRevision ?? 0;
  if (compact > 0) {
    const rev = revisionToBytes({ main: compact, sub: 0 });
    await put({ type: 'put', bucket: 'meta', key: utf8(metaKeys.scheduledCompact), value: rev });
    await put({ type: 'put', bucket: 'meta', key: utf8(metaKeys.finishedCompact), value: rev });
  }
  for await (const op of extras.raw ?? []) await put(op);
  await inFlight;
  await backend.write(batch);
  return { revision: Math.max(lastMain, compact, 1), records: count, leases };
}

/**
 * The record's sub-revision: its own (kept exactly: etcd's HashKV hashes the revision bytes, so a renumbered
 * sub-revision would make a restored member's hash differ from its source's), or the next after `previous`
 * (the sub-revision of the record before it in the same revision; undefined: the first of its revision).
 */
function nextSub(r: RevisionRecord, previous: number | undefined): number {
  if (r.sub === undefined) return previous === undefined ? 0 : previous + 1;
  if (!Number.isSafeInteger(r.sub) || r.sub < 0 || (previous !== undefined && r.sub <= previous)) {
    throw new RestoreError(`records out of order: revision ${r.modRevision} sub-revision ${r.sub} after ${previous ?? 'none'}`);
  }
  return r.sub;
}

async function exists(path: string): Promise<boolean> {
  return stat(path).then(() => true, () => false);
}
