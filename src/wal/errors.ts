/**
 * The WAL's typed errors. Stable `code`s so callers (the server, the CLI) branch on them, not on messages.
 * - WalCorruptError: durable data is damaged; the WAL refuses to open rather than drop committed records.
 * - WalFatalError: a write or sync failed. The WAL is dead: every pending and later save rejects with it and
 *   nothing is retried (after a failed fsync the page cache state is unknown; PostgreSQL's "fsyncgate").
 * - WalNoSpaceError: a new log's first segment does not fit on the disk, even at the smallest size.
 * - WalLockedError: another process (or another open in this one) holds the data directory.
 * - WalClosedError: the WAL was closed.
 */

export class WalCorruptError extends Error {
  override name = 'WalCorruptError';
  readonly code = 'WAL_CORRUPT';
  constructor(
    readonly file: string,
    readonly offset: number,
    readonly reason: string,
  ) {
    super(`wal: corrupt data in ${file} at offset ${offset}: ${reason}; refusing to start`);
  }
}

export class WalFatalError extends Error {
  override name = 'WalFatalError';
  readonly code = 'WAL_FATAL';
  constructor(
    readonly operation: string,
    override readonly cause: unknown,
  ) {
    super(`wal: ${operation} failed (${describe(cause)}); the log is unusable and the process must exit`);
  }
}

export class WalNoSpaceError extends Error {
  override name = 'WalNoSpaceError';
  readonly code = 'WAL_NO_SPACE';
  constructor(
    readonly dir: string,
    readonly neededBytes: number,
  ) {
    super(`wal: no space in ${dir} for the write-ahead log: even the smallest segment (${neededBytes / (1024 * 1024)} MiB) does not fit; free some space or give --data-dir a larger disk`);
  }
}

export class WalLockedError extends Error {
  override name = 'WalLockedError';
  readonly code = 'WAL_LOCKED';
  constructor(
    readonly dir: string,
    readonly holder: string,
  ) {
    super(`wal: data directory ${dir} is locked by ${holder}; is another etcetera running on it?`);
  }
}

export class WalClosedError extends Error {
  override name = 'WalClosedError';
  readonly code = 'WAL_CLOSED';
  constructor() {
    super('wal: closed');
  }
}

function describe(cause: unknown): string {
  if (cause instanceof Error) {
    const code = (cause as { code?: unknown }).code;
    return typeof code === 'string' ? `${code}: ${cause.message}` : cause.message;
  }
  return String(cause);
}
