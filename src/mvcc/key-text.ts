/**
 * Keys held by the in-memory index as latin1 strings: one char per byte, so string order (UTF-16 code units,
 * all < 256 here) is exactly etcd's unsigned byte order, and `<` compares natively. Measured (bench/heap-per-key.ts)
 * a 13-byte key costs V8 32 bytes as a string against ≈ 260 as a Uint8Array (the typed array, its ArrayBuffer
 * object and the backing store each have headers of their own): on a 1 M-key index, the difference between
 * fitting the heap V8 gets in a 512 MiB cgroup and a heap OOM (issue 10).
 *
 * The text is always a flat one-byte string built in one piece (never `s += c`, which builds a chain of
 * cons strings, 32 bytes a link, for every key of 13 bytes or more), and bytes handed out are fresh owned
 * copies.
 */

/** fromCharCode's argument count stays well under engines' limits; longer keys are concatenated, rare. */
const charsPerCall = 4096;

export function keyText(key: Uint8Array): string {
  if (key.length <= charsPerCall) return String.fromCharCode.apply(null, key as unknown as number[]);
  let out = '';
  for (let i = 0; i < key.length; i += charsPerCall) {
    out += String.fromCharCode.apply(null, key.subarray(i, i + charsPerCall) as unknown as number[]);
  }
  return out;
}

/** The key's bytes, in an ArrayBuffer of exactly their length (owned by the caller). */
export function keyTextBytes(text: string): Uint8Array {
  const out = new Uint8Array(text.length);
  for (let i = 0; i < text.length; i++) out[i] = text.charCodeAt(i);
  return out;
}
