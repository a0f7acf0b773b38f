/**
 * HashKV with etcd's meaning (server/mvcc/hash.go, kvstore.go hashByRev): CRC-32C over the bucket name
 * "key" and then, in revision order, every stored (revision key, KeyValue bytes) with main ≤ rev, skipping
 * entries at or below the compact revision unless compaction at rev would keep them (when anything is kept).
 * Because we store etcd's exact bytes, equal histories give etcd's hash.
 */
import { decodeKeyValue } from './kv-codec.js';
import type { MvccCore } from './kv-core.js';
import { Crc32c } from './kv-codec.js';
import { codeMain, codeToBytes } from './rev-code.js';
import { MvccError } from './types.js';

export interface KvHash {
  hash: number;
  compactRevision: number;
  /** The revision the hash covers. */
  hashRevision: number;
}

export function hashKV(core: MvccCore, revision: number): KvHash {
  const compactRev = core.compactRev;
  if (revision > 0 && revision < compactRev) throw new MvccError('compacted');
  if (revision > 0 && revision > core.currentRev) throw new MvccError('futureRev');
  const rev = revision === 0 ? core.currentRev : revision;
  // etcd's keep(rev) is, per key, its live entry at rev; only its emptiness and membership matter here.
  let keepNonEmpty = false;
  for (const ki of core.tree.all()) {
    if (ki.get(rev) !== undefined) {
      keepNonEmpty = true;
      break;
    }
  }
  const crc = new Crc32c().update(new TextEncoder().encode('key'));
  for (const code of core.log) {
    const main = codeMain(code);
    if (main > rev) break;
    const raw = core.values.raw(code);
    if (main <= compactRev && keepNonEmpty && core.tree.get(decodeKeyValue(raw).key)?.get(rev) !== code) continue;
    crc.update(codeToBytes(code));
    crc.update(raw);
  }
  return { hash: crc.sum(), compactRevision: compactRev, hashRevision: rev };
}
