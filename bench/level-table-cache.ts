/**
 * What LevelDB's table cache costs and saves (src/storage/level-backend.ts): LevelDB maps each table it opens and
 * keeps it mapped while it stays in the table cache (maxOpenFiles − 10 tables). Loads 100 MB (100,000 × 1 KB
 * random values) into a fresh database, compacts it, then measures a random point read (getSync over the whole
 * key space, 50,000 reads) and the mapped file pages (RssFile) after a full scan, as a snapshot export does.
 * Each configuration runs in its own process, so one's mappings do not count in the other's RSS.
 * Expectation: with 74 files and 1 MiB tables the scan leaves at most ~64 MiB of tables mapped (the default
 * configuration, the whole database), and a random read that misses the cache costs a table reopen.
 *
 *   npx tsx bench/level-table-cache.ts [--keys 100000]
 */
import { execFileSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, readFileSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { ClassicLevel } from 'classic-level';

const arg = (name: string, fallback: string): string => {
  const i = process.argv.indexOf(`--${name}`);
  return i > 0 ? process.argv[i + 1]! : fallback;
};
const configs: Record<string, { maxOpenFiles: number; maxFileSize: number }> = {
  'LevelDB defaults (1000 files, 2 MiB tables)': { maxOpenFiles: 1000, maxFileSize: 2 * 1024 * 1024 },
  'ours (74 files, 1 MiB tables)': { maxOpenFiles: 74, maxFileSize: 1024 * 1024 },
};
const rssFileMb = (): number => Number(/RssFile:\s+(\d+)/.exec(readFileSync('/proc/self/status', 'utf8'))![1]) / 1024;

async function measure(name: string, keys: number): Promise<void> {
  const dir = mkdtempSync(join(tmpdir(), 'etcetera-tables-'));
  const db = new ClassicLevel<Uint8Array, Uint8Array>(dir, { keyEncoding: 'view', valueEncoding: 'view', writeBufferSize: 1024 * 1024, ...configs[name]! });
  await db.open();
  try {
    const key = (i: number): Uint8Array => Buffer.from(`k/${String(i).padStart(8, '0')}`);
    for (let i = 0; i < keys; i += 1000) {
      const ops = [];
      for (let j = i; j < Math.min(keys, i + 1000); j++) ops.push({ type: 'put' as const, key: key(j), value: randomBytes(1024) });
      await db.batch(ops);
    }
    await db.compactRange(Buffer.from('k'), Buffer.from('l'));
    const reads = 50_000;
    const t0 = performance.now();
    for (let i = 0; i < reads; i++) if (db.getSync(key((i * 7919) % keys)) === undefined) throw new Error('missing key');
    const getUs = ((performance.now() - t0) * 1000) / reads;
    const before = rssFileMb();
    for await (const _ of db.iterator()) { /* a full scan, as a snapshot export reads */ }
    const tables = readdirSync(dir).filter((f) => f.endsWith('.ldb')).length;
    console.log(`${name}: ${tables} tables; random get ${getUs.toFixed(1)} µs; mapped file pages ${before.toFixed(0)} MB after the gets, ` +
      `${rssFileMb().toFixed(0)} MB after a full scan (Node's binary and libraries included)`);
  } finally {
    await db.close();
    rmSync(dir, { recursive: true, force: true });
  }
}

const one = arg('config', '');
const keys = Number(arg('keys', '100000'));
if (one !== '') await measure(one, keys);
else {
  for (const name of Object.keys(configs)) {
    execFileSync(process.execPath, [...process.execArgv, fileURLToPath(import.meta.url), '--config', name, '--keys', String(keys)], { stdio: 'inherit' });
  }
}
