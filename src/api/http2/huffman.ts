/**
 * HPACK's static Huffman code (RFC 7541 5.2 and Appendix B), decoding only: we never Huffman-code what we send.
 *
 * Decoding reads four bits at a time through a table built once at load (nghttp2's approach). The code is
 * canonical and complete (every bit path ends at a symbol), so its decoding tree has 256 internal nodes for its
 * 257 symbols. A decoding state is the internal node reached by the bits read since the last symbol (state 0 is
 * the root). For each state and each nibble the table holds where the 4 bits lead: the next state, the symbol
 * completed on the way (at most one, since the shortest code has 5 bits), whether EOS was met, and whether the
 * input may end there: only at a node reached by at most 7 one-bits (RFC 7541 5.2: padding is a prefix of EOS,
 * shorter than a byte).
 *
 * Worked example, "no-cache" = a8 eb 10 64 9c bf, where 'n' is 101010 and 'o' 00111: from the root, nibble a =
 * 1010 completes nothing (state: the node for 1010); nibble 8 = 10|00 completes 'n' and stops at the node for 00;
 * nibble e = 111 completes 'o' (00111), then 0 leads to the node for 0; and so on.
 *
 * Cost: 256 × 16 entries of 4 bytes (16 KiB) built in about a millisecond at load; two table loads per byte.
 * A byte-wide table (256 KiB, ~9 ms to build) was measured ~2 ns/byte faster, which only shows on values of
 * hundreds of bytes; a gRPC call's Huffman-coded literal is mostly a grpc-timeout of 2-4 bytes. The Map lookup
 * per bit that this replaced cost ~30 ns per bit.
 */

/** RFC 7541 Appendix B code lengths for symbols 0..255; symbol 256 (EOS) has 30 bits. The code is canonical. */
export const codeLengths: readonly number[] = [
  13, 23, 28, 28, 28, 28, 28, 28, 28, 24, 30, 28, 28, 30, 28, 28, 28, 28, 28, 28, 28, 28, 30, 28, 28, 28, 28, 28, 28,
  28, 28, 28, 6, 10, 10, 12, 13, 6, 8, 11, 10, 10, 8, 11, 8, 6, 6, 6, 5, 5, 5, 6, 6, 6, 6, 6, 6, 6, 7, 8, 15, 6, 12,
  10, 13, 6, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 8, 7, 8, 13, 19, 13, 14, 6, 15, 5, 6,
  5, 6, 5, 6, 6, 6, 5, 7, 7, 6, 6, 6, 5, 6, 7, 6, 5, 5, 6, 7, 7, 7, 7, 7, 15, 11, 14, 13, 28, 20, 22, 20, 20, 22, 22,
  22, 23, 22, 23, 23, 23, 23, 23, 24, 23, 24, 24, 22, 23, 24, 23, 23, 23, 23, 21, 22, 23, 22, 23, 23, 24, 22, 21, 20,
  22, 22, 23, 23, 21, 23, 22, 22, 24, 21, 22, 23, 23, 21, 21, 22, 21, 23, 22, 23, 23, 20, 22, 22, 22, 23, 22, 22, 23,
  26, 26, 20, 19, 22, 23, 22, 25, 26, 26, 26, 27, 27, 26, 24, 25, 19, 21, 26, 27, 27, 26, 27, 24, 21, 21, 26, 26, 28,
  27, 27, 27, 20, 24, 20, 21, 22, 21, 21, 23, 22, 22, 25, 25, 24, 24, 26, 23, 26, 27, 26, 26, 27, 27, 27, 27, 27, 28,
  27, 27, 27, 27, 27, 26, 30,
];

const symbolCount = 257;
const eos = 256;
/** RFC 7541 5.2: padding "strictly longer than 7 bits MUST be treated as a decoding error". */
const paddingBitsMax = 7;

/** Each symbol's code, right-aligned (codes are at most 30 bits, so they fit a non-negative int32). */
export const huffmanCodes: Int32Array = (() => {
  const symbols = codeLengths.map((length, symbol) => ({ length, symbol }));
  symbols.sort((a, b) => a.length - b.length || a.symbol - b.symbol);
  const codes = new Int32Array(symbolCount);
  let code = 0;
  let length = symbols[0]!.length;
  for (const s of symbols) {
    code <<= s.length - length;
    length = s.length;
    codes[s.symbol] = code;
    code++;
  }
  // A complete canonical code ends on the all-ones code of the longest length: EOS, 30 one-bits.
  if (code !== 2 ** 30 || codes[eos] !== 2 ** 30 - 1) throw new Error('Huffman table is not a complete code');
  return codes;
})();

/**
 * The decoding tree: node n's children are child[2n] (bit 0) and child[2n+1] (bit 1); a child ≥ 0 is an
 * internal node, a child < 0 is the leaf of symbol (-child - 1). Internal nodes are numbered in creation order,
 * root first, so they double as decoding states.
 */
function buildTree(): { child: Int32Array; endOk: Uint8Array } {
  const internalNodes = symbolCount - 1;
  const child = new Int32Array(2 * internalNodes);
  const depth = new Int32Array(internalNodes);
  const allOnes = new Uint8Array(internalNodes);
  allOnes[0] = 1;
  let nodes = 1;
  for (let symbol = 0; symbol < symbolCount; symbol++) {
    const length = codeLengths[symbol]!;
    let node = 0;
    for (let i = length - 1; i >= 0; i--) {
      const bit = (huffmanCodes[symbol]! >>> i) & 1;
      const slot = 2 * node + bit;
      if (i === 0) {
        if (child[slot] !== 0) throw new Error('Huffman code is not prefix-free');
        child[slot] = -symbol - 1;
      } else {
        if (child[slot] === 0) {
          if (nodes >= internalNodes) throw new Error('Huffman tree has too many nodes');
          depth[nodes] = depth[node]! + 1;
          allOnes[nodes] = allOnes[node]! & bit;
          child[slot] = nodes++;
        }
        if (child[slot]! < 0) throw new Error('Huffman code is not prefix-free');
        node = child[slot]!;
      }
    }
  }
  if (nodes !== internalNodes) throw new Error('Huffman tree is not complete');
  const endOk = new Uint8Array(internalNodes);
  for (let n = 0; n < internalNodes; n++) endOk[n] = allOnes[n]! && depth[n]! <= paddingBitsMax ? 1 : 0;
  return { child, endOk };
}

// An entry of the nibble table: bits 0-7 the next state, bit 8 "a symbol was completed", bits 9-16 that symbol,
// bit 17 "EOS was decoded" (an error), bit 18 "the input may end here".
const symbolFlag = 1 << 8;
const symbolShift = 9;
const eosFlag = 1 << 17;
const endOkFlag = 1 << 18;

const nibbleTable: Uint32Array = (() => {
  const { child, endOk } = buildTree();
  const table = new Uint32Array(256 * 16);
  for (let state = 0; state < 256; state++) {
    for (let nibble = 0; nibble < 16; nibble++) {
      let node = state;
      let entry = 0;
      for (let bit = 3; bit >= 0; bit--) {
        const next = child[2 * node + ((nibble >> bit) & 1)]!;
        if (next >= 0) {
          node = next;
          continue;
        }
        const symbol = -next - 1;
        node = 0;
        if (symbol === eos) entry |= eosFlag;
        else {
          if ((entry & symbolFlag) !== 0) throw new Error('a nibble completed two Huffman symbols');
          entry |= symbolFlag | (symbol << symbolShift);
        }
      }
      table[state * 16 + nibble] = entry | node | (endOk[node] ? endOkFlag : 0);
    }
  }
  return table;
})();

/** Decoded bytes are gathered in `scratch`, then turned into one string: 256 bytes, then this size once a longer
 * value came; a value that may decode to more (over 10 KiB coded, rare) gets a buffer of its own, then dropped. */
const scratchBytesMax = 16 * 1024;
let scratch = Buffer.allocUnsafe(256);

/**
 * Decodes `bytes[start, end)` as a latin1 string (a header value's bytes, one char per byte, as Node gives them);
 * undefined when it is not a valid HPACK Huffman string: EOS inside it, or padding longer than 7 bits or not all
 * one-bits (RFC 7541 5.2).
 */
export function huffmanDecode(bytes: Uint8Array, start = 0, end = bytes.length): string | undefined {
  // 5 bits is the shortest code, so n bytes decode to at most 8n/5 symbols.
  const outMax = Math.ceil(((end - start) * 8) / 5);
  if (scratch.length < outMax && outMax <= scratchBytesMax) scratch = Buffer.allocUnsafe(scratchBytesMax);
  const out = outMax <= scratch.length ? scratch : Buffer.allocUnsafe(outMax);
  let n = 0;
  let entry = endOkFlag; // the empty string is valid
  let state = 0;
  for (let i = start; i < end; i++) {
    const byte = bytes[i]!;
    const high = nibbleTable[(state << 4) | (byte >> 4)]!;
    if ((high & symbolFlag) !== 0) out[n++] = (high >>> symbolShift) & 0xff;
    entry = nibbleTable[((high & 0xff) << 4) | (byte & 0xf)]!;
    if ((entry & symbolFlag) !== 0) out[n++] = (entry >>> symbolShift) & 0xff;
    if (((high | entry) & eosFlag) !== 0) return undefined;
    state = entry & 0xff;
  }
  if ((entry & endOkFlag) === 0) return undefined;
  return latin1String(out, 0, n);
}

/** Buffer#latin1Slice: what toString('latin1', start, end) calls after checking its arguments (~20 ns less). */
type Latin1Slice = (this: Buffer, start: number, end: number) => string;
const latin1Slice: Latin1Slice =
  (Buffer.prototype as unknown as { latin1Slice?: Latin1Slice }).latin1Slice ??
  // Undocumented: a Node without it takes the documented way.
  function (this: Buffer, start: number, end: number): string {
    return this.toString('latin1', start, end);
  };

/** Up to this many bytes, a string is built char by char: cheaper than a call into C++ (2 bytes: 18 ns, not ~65). */
const shortStringBytes = 4;

/** `bytes[start, end)` as a latin1 string (also hpack.ts's raw string literals). */
export function latin1String(bytes: Buffer, start: number, end: number): string {
  if (end - start > shortStringBytes) return latin1Slice.call(bytes, start, end);
  let text = '';
  for (let i = start; i < end; i++) text += String.fromCharCode(bytes[i]!);
  return text;
}
