/**
 * How a start check's failure reads (start-checks.ts, witness-start-checks.ts): a held lock or a damaged log
 * as the operator's message, with the ways out, and the note that nothing was changed.
 */
import type { Identity } from '../storage/identity.js';
import { WalCorruptError, WalLockedError } from '../wal/index.js';
import { waysOutOfDamage } from './ways-out.js';

export const unchangedNote = 'checked before opening the data directory, which was not changed';

export function refusalOf(error: unknown, memberDir: string, identity: Identity): unknown {
  if (error instanceof WalLockedError) return new Error(`${memberDir} is in use by ${error.holder}; is another etcetera running on it? Stop it first`);
  if (error instanceof WalCorruptError) return new Error(`${error.message}; no file was changed. ${waysOutOfDamage(identity.memberId)}`);
  return error;
}
