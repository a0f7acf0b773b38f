/**
 * A bounded LRU of decoded KeyValues by revision code: the hot values, so repeated reads of the same keys
 * do not decode from the backend every time. Bounded in bytes (keys + values + a per-entry overhead);
 * entries must own their bytes (the decoder copies out of the backend's buffers).
 */
import type { KeyValue } from './types.js';

/** V8 object, Map slot and two small typed-array headers per cached KeyValue, about. */
const entryOverheadBytes = 256;

export function cachedBytesOf(kv: KeyValue): number {
  return kv.key.length + kv.value.length + entryOverheadBytes;
}

export class ValueCache {
  readonly #budgetBytes: number;
  readonly #entries = new Map<number, KeyValue>();
  #bytes = 0;

  constructor(budgetBytes: number) {
    this.#budgetBytes = budgetBytes;
  }

  get bytes(): number {
    return this.#bytes;
  }

  get size(): number {
    return this.#entries.size;
  }

  /** Every cached KeyValue (for the retained-bytes guard). */
  values(): IterableIterator<KeyValue> {
    return this.#entries.values();
  }

  get(code: number): KeyValue | undefined {
    const kv = this.#entries.get(code);
    if (kv !== undefined) {
      // Most recently used moves to the end of the Map's insertion order.
      this.#entries.delete(code);
      this.#entries.set(code, kv);
    }
    return kv;
  }

  set(code: number, kv: KeyValue): void {
    const bytes = cachedBytesOf(kv);
    if (bytes > this.#budgetBytes / 4) return; // one huge value must not flush everything else
    this.delete(code);
    this.#entries.set(code, kv);
    this.#bytes += bytes;
    for (const [oldest, old] of this.#entries) {
      if (this.#bytes <= this.#budgetBytes) break;
      this.#entries.delete(oldest);
      this.#bytes -= cachedBytesOf(old);
    }
  }

  delete(code: number): void {
    const kv = this.#entries.get(code);
    if (kv === undefined) return;
    this.#entries.delete(code);
    this.#bytes -= cachedBytesOf(kv);
  }

  clear(): void {
    this.#entries.clear();
    this.#bytes = 0;
  }
}
