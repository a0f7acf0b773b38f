/**
 * The witness's restart checks, apart from start-checks.ts so that the witness bundle does not load the data
 * member's backend probe (LevelDB): test/e2e/witness-bundle.test.ts.
 */
import { join } from 'node:path';
import type { MemberOptions } from '../config/member-options.js';
import type { Identity } from '../storage/identity.js';
import { walDirOf } from '../storage/wal-dir.js';
import { Wal } from '../wal/index.js';
import { checkListeners } from './listeners-free.js';
import { refusalOf, unchangedNote } from './start-refusals.js';
import { witnessWaysOutOfDamage } from './ways-out.js';

/**
 * A witness's restart, checked the same way (issue 32, item 5): it has no backend, so only the lock, the log
 * (nothing applied to hold it to) and its addresses. Before this, its log was opened (lock taken, torn tail
 * cleared, next segment prepared) before a taken port refused the start.
 */
export async function checkWitnessRestart(o: MemberOptions, identity: Identity): Promise<void> {
  const memberDir = join(o.dataDir, 'member');
  const walDir = walDirOf(o.dataDir, o.walDir);
  try {
    await Wal.check(walDir, { appliedIndex: 0, lockOnly: true });
    await Wal.check(walDir, { appliedIndex: 0 });
  } catch (error) {
    throw refusalOf(error, { memberDir, waysOut: witnessWaysOutOfDamage(identity.memberId) });
  }
  await checkListeners(o, unchangedNote);
}
