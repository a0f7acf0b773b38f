/**
 * How a start check's failure reads (start-checks.ts, witness-start-checks.ts): a held lock or a damaged log
 * as the operator's message, with the ways out, and the note that nothing was changed.
 */
import { WalCorruptError, WalLockedError } from '../wal/index.js';

export const unchangedNote = 'checked before opening the data directory, which was not changed';

/** `waysOut`: what the operator can do about damage (ways-out.ts: a data member's, or a witness's own). */
export function refusalOf(error: unknown, o: { memberDir: string; waysOut: string }): unknown {
  if (error instanceof WalLockedError) return new Error(`${o.memberDir} is in use by ${error.holder}; is another etcetera running on it? Stop it first`);
  if (error instanceof WalCorruptError) return new Error(`${error.message}; no file was changed. ${o.waysOut}`);
  return error;
}
