/**
 * Bulk loading for the read and memory scenarios: keys `${prefix}${i}` (i zero-padded to 7 digits) through
 * Txns of 100 puts, 8 in flight. Random values by default, so neither store gains from compressing them
 * (LevelDB compresses blocks with Snappy; bbolt does not).
 */
import { randomBytes } from 'node:crypto';
import { performance } from 'node:perf_hooks';
import type { RawClient } from './client.js';
import { encodePut, encodeTxnPuts } from './wire.js';

export interface LoadResult {
  keysPerSec: number;
  /** Keys whose Txn succeeded. */
  loaded: number;
  /** The first error, if a Txn failed (loading stops there). */
  error?: string;
}

export interface LoadOptions {
  /** Same byte in every value instead of random bytes. */
  constant?: boolean;
  /** Called after each Txn succeeds (progress sampling). */
  onTxn?: () => void;
}

export const bulkKey = (prefix: string, i: number): Buffer => Buffer.from(`${prefix}${String(i).padStart(7, '0')}`);

export async function bulkLoad(conn: RawClient, prefix: string, count: number, valueBytes: number, o: LoadOptions = {}): Promise<LoadResult> {
  const constant = Buffer.alloc(valueBytes, 0x64);
  const perTxn = 100;
  const t0 = performance.now();
  let next = 0;
  let loaded = 0;
  let error: string | undefined;
  const worker = async (): Promise<void> => {
    while (next < count && error === undefined) {
      const from = next;
      next = Math.min(count, next + perTxn);
      const puts: [Buffer, Buffer][] = [];
      for (let i = from; i < next; i++) puts.push([bulkKey(prefix, i), o.constant ? constant : randomBytes(valueBytes)]);
      try {
        await conn.txn(encodeTxnPuts(puts), 60_000);
        loaded += puts.length;
        o.onTxn?.();
      } catch (e) {
        error ??= e instanceof Error ? e.message : String(e);
      }
    }
  };
  await Promise.all(Array.from({ length: 8 }, worker));
  return { keysPerSec: (loaded / (performance.now() - t0)) * 1000, loaded, error };
}

/**
 * Single puts from many concurrent clients, as fast as answers come (the issue-22 shape: an apiserver's
 * offered load, not a loader pacing itself): keys `${prefix}${i}`, random values, spread over `conns`
 * (HTTP/2 streams share them). A failed put is counted, not retried; loading goes on, so a server that
 * pushes back (etcd's "too many requests") is told apart from one that dies.
 */
export async function concurrentPuts(conns: RawClient[], prefix: string, count: number, valueBytes: number, clients: number): Promise<LoadResult & { failed: number }> {
  const t0 = performance.now();
  let next = 0;
  let loaded = 0;
  let failed = 0;
  let error: string | undefined;
  const worker = async (c: number): Promise<void> => {
    while (next < count) {
      const i = next++;
      try {
        await conns[c % conns.length]!.put(encodePut(bulkKey(prefix, i), randomBytes(valueBytes)), 60_000);
        loaded++;
      } catch (e) {
        failed++;
        error ??= e instanceof Error ? e.message : String(e);
        // A dead server must not turn the loop into a busy spin.
        if (failed > count / 100) return;
        await new Promise((r) => setTimeout(r, 10));
      }
    }
  };
  await Promise.all(Array.from({ length: clients }, (_, c) => worker(c)));
  return { keysPerSec: (loaded / (performance.now() - t0)) * 1000, loaded, failed, error };
}
