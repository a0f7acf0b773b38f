/** Seeded generator of etcd KV requests over a small key pool (binary keys, prefixes, from-key), shared by the model and differential tests. */
import { prefixEnd } from '../../src/base/bytes.js';
import type { Prng } from '../../src/base/prng.js';
import type { Compare, RangeRequest, RequestOp, TxnRequest } from '../../src/mvcc/types.js';
import { Draws } from './draws.js';
import { toBytes, toStr, type Model } from './model.js';

export const keyPool = ['a', 'b', 'c', 'd', 'aa', 'ab', 'abc', 'b\xff', '\x00', '\xff', '\xff\xff', 'ba', 'c\x00'];

export class Gen extends Draws {
  constructor(rng: Prng, readonly model: Model) {
    super(rng);
  }
  key(): string {
    return this.pick(keyPool);
  }
  end(key: string): string {
    switch (this.int(5)) {
      case 0: case 1: return '';
      case 2: return '\x00';
      case 3: return toStr(prefixEnd(toBytes(key)));
      default: return this.key();
    }
  }
  rev(): number {
    const lo = Math.max(this.model.compactRev - 1, 0);
    return this.chance(0.5) ? 0 : lo + this.int(this.model.rev - lo + 2);
  }
  range(): RangeRequest {
    const key = this.key();
    const filter = (): number => (this.chance(0.15) ? 1 + this.int(this.model.rev + 1) : 0);
    return {
      key: toBytes(key), rangeEnd: toBytes(this.end(key)), limit: this.chance(0.4) ? this.int(4) : 0, revision: this.rev(),
      sortOrder: this.int(3) as 0, sortTarget: this.int(5) as 0, serializable: false, keysOnly: this.chance(0.2), countOnly: this.chance(0.1),
      minModRevision: filter(), maxModRevision: filter(), minCreateRevision: filter(), maxCreateRevision: filter(),
    };
  }
  value(): Uint8Array {
    return toBytes(this.pick(['', 'x', 'y', 'zz', '\x00v']));
  }
  op(depth: number): RequestOp {
    const r = this.int(depth < 2 ? 10 : 9);
    if (r < 3) return { range: this.range() };
    if (r < 6) {
      const ignoreValue = this.chance(0.1);
      const ignoreLease = this.chance(0.1);
      return { put: { key: toBytes(this.key()), value: ignoreValue ? new Uint8Array(0) : this.value(),
        lease: ignoreLease || this.chance(0.7) ? 0n : BigInt(1 + this.int(3)), prevKv: this.chance(0.3), ignoreValue, ignoreLease } };
    }
    if (r < 9) {
      const key = this.key();
      return { deleteRange: { key: toBytes(key), rangeEnd: toBytes(this.end(key)), prevKv: this.chance(0.5) } };
    }
    return { txn: this.txn(depth + 1) };
  }
  compare(): Compare {
    const key = this.key();
    const target = this.int(5) as Compare['target'];
    const c: Compare = { key: toBytes(key), rangeEnd: toBytes(this.chance(0.7) ? '' : this.end(key)), target, result: this.int(4) as Compare['result'] };
    const n = this.int(this.model.rev + 2);
    if (target === 0) c.version = this.int(4);
    if (target === 1) c.createRevision = n;
    if (target === 2) c.modRevision = n;
    if (target === 3) c.value = this.value();
    if (target === 4) c.lease = BigInt(this.int(3));
    return c;
  }
  txn(depth: number): TxnRequest {
    const list = (n: number): RequestOp[] => Array.from({ length: this.int(n) }, () => this.op(depth));
    return { compare: Array.from({ length: this.int(3) }, () => this.compare()), success: list(4), failure: list(3) };
  }
}

