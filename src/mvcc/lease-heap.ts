/**
 * A min-heap of (atMs, id) with lazy invalidation: the lessor keeps, per lease, the time of its one valid
 * entry and ignores popped entries whose time no longer matches (renewed, revoked, re-offered). This keeps
 * renew O(log n) without a decrease-key.
 */
export interface HeapItem {
  atMs: number;
  id: bigint;
}

export class LeaseHeap {
  #items: HeapItem[] = [];

  get size(): number {
    return this.#items.length;
  }

  clear(): void {
    this.#items = [];
  }

  push(item: HeapItem): void {
    const a = this.#items;
    a.push(item);
    let i = a.length - 1;
    while (i > 0) {
      const parent = (i - 1) >> 1;
      if (a[parent]!.atMs <= item.atMs) break;
      a[i] = a[parent]!;
      i = parent;
    }
    a[i] = item;
  }

  peek(): HeapItem | undefined {
    return this.#items[0];
  }

  pop(): HeapItem | undefined {
    const a = this.#items;
    const top = a[0];
    const last = a.pop();
    if (top === undefined || last === undefined || a.length === 0) return top;
    let i = 0;
    for (;;) {
      const l = 2 * i + 1;
      if (l >= a.length) break;
      const r = l + 1;
      const c = r < a.length && a[r]!.atMs < a[l]!.atMs ? r : l;
      if (a[c]!.atMs >= last.atMs) break;
      a[i] = a[c]!;
      i = c;
    }
    a[i] = last;
    return top;
  }
}
