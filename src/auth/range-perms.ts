/**
 * A user's merged key permissions (etcd's range_perm_cache.go): the union of the read and of the write
 * intervals of all its roles, and the two checks etcd makes on them.
 *
 * Intervals are [begin, end) over unsigned bytes; `end` undefined is +infinity (a permission whose range end
 * is "\0", i.e. every key ≥ begin). A single-key permission is [key, key + "\0"). Worked example: roles grant
 * read on [a, c) and on [c, e) and on the key "x": merged read = [a, e), [x, x\0). A range request [b, d) is
 * covered (inside [a, e)); [b, y) is not (the gap [e, x)); the point "x" is; the point "e" is not.
 */
import { compareBytes } from '../base/bytes.js';
import { PermType, type Permission, type Role } from './types.js';

interface Interval {
  begin: Uint8Array;
  end: Uint8Array | undefined;
}

/** Compare two ends, where undefined is +infinity. */
function compareEnd(a: Uint8Array | undefined, b: Uint8Array | undefined): number {
  if (a === undefined) return b === undefined ? 0 : 1;
  if (b === undefined) return -1;
  return compareBytes(a, b);
}

function isOpenEnd(rangeEnd: Uint8Array): boolean {
  return rangeEnd.length === 1 && rangeEnd[0] === 0;
}

function keyAfter(key: Uint8Array): Uint8Array {
  const out = new Uint8Array(key.length + 1);
  out.set(key);
  return out;
}

function intervalOf(p: Permission): Interval {
  if (p.rangeEnd.length === 0) return { begin: p.key, end: keyAfter(p.key) };
  return { begin: p.key, end: isOpenEnd(p.rangeEnd) ? undefined : p.rangeEnd };
}

/** Sorted, disjoint, non-adjacent intervals covering exactly the union of the given ones. */
function merge(intervals: Interval[]): Interval[] {
  const sorted = [...intervals].sort((a, b) => compareBytes(a.begin, b.begin) || compareEnd(a.end, b.end));
  const out: Interval[] = [];
  for (const iv of sorted) {
    const last = out[out.length - 1];
    // Touching intervals ([a, c) and [c, e)) cover [a, e) together, as etcd's Contains treats them.
    if (last !== undefined && compareEnd(last.end, iv.begin) >= 0) {
      if (compareEnd(iv.end, last.end) > 0) last.end = iv.end;
    } else out.push({ ...iv });
  }
  return out;
}

/** The merged interval holding `key`, if any (binary search over the sorted disjoint list). */
function holding(merged: Interval[], key: Uint8Array): Interval | undefined {
  let lo = 0;
  let hi = merged.length;
  while (lo < hi) {
    const mid = (lo + hi) >>> 1;
    if (compareBytes(merged[mid]!.begin, key) <= 0) lo = mid + 1;
    else hi = mid;
  }
  const iv = merged[lo - 1];
  return iv !== undefined && compareEnd(iv.end, key) > 0 ? iv : undefined;
}

export class RangePerms {
  readonly #read: Interval[];
  readonly #write: Interval[];

  constructor(roles: Iterable<Role>) {
    const read: Interval[] = [];
    const write: Interval[] = [];
    for (const role of roles) {
      for (const p of role.keyPermission) {
        const iv = intervalOf(p);
        if (p.permType !== PermType.Write) read.push(iv);
        if (p.permType !== PermType.Read) write.push(iv);
      }
    }
    this.#read = merge(read);
    this.#write = merge(write);
  }

  /**
   * etcd's checkKeyPoint / checkKeyInterval: an empty range end asks for the key alone; "\0" for every key
   * from `key` on; otherwise the whole of [key, rangeEnd) must be covered.
   */
  permits(type: typeof PermType.Read | typeof PermType.Write, key: Uint8Array, rangeEnd: Uint8Array): boolean {
    const merged = type === PermType.Read ? this.#read : this.#write;
    const iv = holding(merged, key);
    if (iv === undefined) return false;
    if (rangeEnd.length === 0) return true;
    return compareEnd(iv.end, isOpenEnd(rangeEnd) ? undefined : rangeEnd) >= 0;
  }
}

/**
 * etcd 3.5's isValidPermissionRange: a key is required; a range end, when given, lies after it or starts with
 * a zero byte (from-key). etcd 3.4 accepted any range end.
 */
export function isValidPermissionRange(key: Uint8Array, rangeEnd: Uint8Array): boolean {
  if (key.length === 0) return false;
  if (rangeEnd.length === 0 || rangeEnd[0] === 0) return true;
  return compareBytes(key, rangeEnd) < 0;
}
