/** Byte-string helpers shared by MVCC and the server. Keys are compared as unsigned bytes, as etcd does. */

export function compareBytes(a: Uint8Array, b: Uint8Array): number {
  const n = Math.min(a.length, b.length);
  for (let i = 0; i < n; i++) {
    const d = a[i]! - b[i]!;
    if (d !== 0) return d;
  }
  return a.length - b.length;
}

export function equalBytes(a: Uint8Array, b: Uint8Array): boolean {
  if (a.length !== b.length) return false;
  for (let i = 0; i < a.length; i++) if (a[i] !== b[i]) return false;
  return true;
}

/**
 * The smallest key greater than every key with this prefix (etcd's `GetPrefixRangeEnd`): drop trailing 0xff
 * bytes and increment the last. A prefix of only 0xff bytes has no end; etcd then uses "\0" (from-key).
 */
export function prefixEnd(prefix: Uint8Array): Uint8Array {
  for (let i = prefix.length - 1; i >= 0; i--) {
    if (prefix[i]! < 0xff) {
      const end = prefix.slice(0, i + 1);
      end[i]! += 1;
      return end;
    }
  }
  return new Uint8Array([0]);
}

const encoder = new TextEncoder();
const decoder = new TextDecoder();

export function utf8(s: string): Uint8Array {
  return encoder.encode(s);
}

export function fromUtf8(b: Uint8Array): string {
  return decoder.decode(b);
}

/**
 * A copy that owns an ArrayBuffer of exactly its length. Bytes kept beyond a request (stored keys, cached
 * values) must be copied with this: `Buffer#slice` returns a view, and `Buffer.from` takes small copies out
 * of a shared 8 KiB pool, so either would pin a buffer far larger than the bytes kept.
 */
export function ownedCopy(b: Uint8Array): Uint8Array {
  const out = new Uint8Array(b.length);
  out.set(b);
  return out;
}
