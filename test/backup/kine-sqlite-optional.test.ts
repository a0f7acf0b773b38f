/** better-sqlite3 is optional: only `migrate --from-kine` loads it, and its absence is a clear sentence. */
import { afterEach, describe, expect, it, vi } from 'vitest';

afterEach(() => {
  vi.doUnmock('better-sqlite3');
  vi.resetModules();
});

describe('better-sqlite3 is loaded only by a kine migration', () => {
  it('loads the Database class when it is installed', async () => {
    const { loadSqlite } = await import('../../src/backup/kine-sqlite.js');
    expect(typeof (await loadSqlite())).toBe('function');
  });

  it('says how to install it when it is missing', async () => {
    vi.resetModules();
    vi.doMock('better-sqlite3', () => {
      throw new Error("Cannot find package 'better-sqlite3'");
    });
    const { loadSqlite } = await import('../../src/backup/kine-sqlite.js');
    await expect(loadSqlite()).rejects.toThrow(/migrate --from-kine needs better-sqlite3, an optional dependency that is not installed here .*npm install better-sqlite3/);
  });
});
