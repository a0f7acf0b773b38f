/**
 * Every check that can refuse a restart, run before anything in the data directory (or --wal-dir) is opened
 * for writing, so a refused start leaves every file byte-identical for a backup tool or a second opinion
 * (issue 32, item 2). Before this, LevelDB had already replayed its log into a new table and the key-index
 * checkpoint was deleted when the damaged log was found.
 *
 * The refusals of a restart, in the order they are met (test/e2e/refused-start.test.ts hashes the tree
 * before and after each):
 *   1. a --token other than the stored one (bootstrap.ts, reads the identity file only);
 *   2. another process holding the directory (the log's LOCK names a live process);
 *   3. a log missing where this start looks for it (--wal-dir forgotten or wrong: storage/wal-dir.ts);
 *   4. a damaged log: corruption, or a damaged last record that held committed entries (wal/recover.ts);
 *   5. a backend behind the log's snapshot whose data is gone (storage.ts would catch it up from that data);
 *   6. an address to listen on that is taken.
 * The opens that follow check the same things again (a race is still refused, only later).
 */
import { join } from 'node:path';
import type { MemberOptions } from '../config/member-options.js';
import type { Identity } from '../storage/identity.js';
import { refuseMisplacedLog, walDirOf } from '../storage/wal-dir.js';
import { Wal } from '../wal/index.js';
import { probeConsistentIndex } from './backend-probe.js';
import { checkListeners } from './listeners-free.js';
import { withRegisteredUrls } from './registered-urls.js';
import { backendBehindSnapshotError, waysOutOfDamage } from './ways-out.js';
import { refusalOf, unchangedNote } from './start-refusals.js';
import { SnapshotDataDir } from '../storage/snapshot-data.js';
import type { SnapshotMeta } from '../raft/types.js';

export async function checkRestart(o: MemberOptions, identity: Identity): Promise<void> {
  const memberDir = join(o.dataDir, 'member');
  const walDir = walDirOf(o.dataDir, o.walDir);
  try {
    // The lock first: another member running here changes the files under the probe.
    await Wal.check(walDir, { appliedIndex: 0, lockOnly: true });
    const consistentIndex = await probeConsistentIndex(join(memberDir, 'db'));
    await refuseMisplacedLog(o.dataDir, o.walDir, consistentIndex ?? 0);
    const { snapshot } = await Wal.check(walDir, { appliedIndex: consistentIndex ?? 0 });
    if (consistentIndex !== undefined) await refuseBackendBehindSnapshot(memberDir, walDir, identity.memberId, consistentIndex, snapshot);
  } catch (error) {
    throw refusalOf(error, { memberDir, waysOut: waysOutOfDamage(identity.memberId) });
  }
  const { options } = withRegisteredUrls(o, identity.urls, undefined);
  await checkListeners(options, unchangedNote);
}

/**
 * The same test as storage.ts's catch-up from a snapshot, read-only: a backend behind the log's snapshot is
 * fine while the snapshot's data is there to restore from (received in member/snap, or in an older build's
 * snapshot file in the log), and refused when it is gone.
 */
async function refuseBackendBehindSnapshot(memberDir: string, walDir: string, memberId: bigint, consistentIndex: number, snapshot: SnapshotMeta): Promise<void> {
  if (snapshot.index <= consistentIndex) return;
  if ((await new SnapshotDataDir(join(memberDir, 'snap')).source(snapshot)) !== undefined) return;
  const legacy = await Wal.peekSnapshot(walDir, snapshot);
  if (legacy !== undefined && legacy.data.length > 0) return;
  throw backendBehindSnapshotError(memberDir, memberId, consistentIndex, snapshot.index);
}
