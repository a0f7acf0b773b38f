/**
 * What decoding a gRPC request's header block costs (src/api/h2frames/hpack.ts), per block, for the blocks a
 * grpc-go client (etcdctl, the Go clientv3) sends on one connection. Go's HPACK encoder indexes every field and
 * Huffman-codes a string when that is shorter; the blocks here come from a model of it (below), not a capture:
 *   first call: :method POST and :scheme http indexed, then :path, :authority, content-type, user-agent, te and
 *               grpc-timeout as literals with incremental indexing, Huffman-coded (8 fields, ~100 bytes);
 *   later calls: the same fields all indexed from the dynamic table, except grpc-timeout, whose value changes on
 *               every call: a literal with an indexed name and a new Huffman value (~8 bytes of block).
 * Its grpc-timeout entries fill the 4096-byte table after ~70 calls, so the steady state also evicts, and every
 * ~70 calls re-sends the fixed fields as literals (as Go does once they are evicted).
 * Expectation: a steady-state block under 1 µs (7 indexed lookups, one 4-byte Huffman string, one table insert);
 * the first block a few µs (six Huffman strings).
 * Measured (2-vCPU AMD EPYC, Node 20, load ~2.5, 2026-12-06): new decoder 23 ns, first block ~0.8 µs, a
 * steady-state block ~180 ns, all 1,000 blocks ~190 ns each. Half of a steady block is its one Huffman string
 * (~110 ns for 6 bytes; the Map-per-bit decoder this replaced took ~500 ns for it).
 *
 *   npx tsx bench/hpack-decode.ts [--calls 1000] [--rounds 300]
 */
import { HpackDecoder } from '../src/api/h2frames/hpack.js';
import { indexed, literalIndexed } from '../test/api/h2frames/hpack-test-encoder.js';

const arg = (name: string, fallback: number): number => {
  const i = process.argv.indexOf(`--${name}`);
  return i > 0 ? Number(process.argv[i + 1]) : fallback;
};
const calls = arg('calls', 1000);
const rounds = arg('rounds', 300);
const warmUpMs = 300;

const staticTable: [string, string][] = [
  [':authority', ''], [':method', 'GET'], [':method', 'POST'], [':path', '/'], [':path', '/index.html'],
  [':scheme', 'http'], [':scheme', 'https'], ...Array.from({ length: 23 }, (): [string, string] => ['-', '-']),
  ['content-type', ''], ...Array.from({ length: 26 }, (): [string, string] => ['-', '-']), ['user-agent', ''],
];

/** Go's encoder, as far as these fields need: an exact match is indexed, else a literal with incremental indexing. */
class GoLikeEncoder {
  #table: [string, string][] = []; // newest first
  #bytes = 0;

  encode(fields: [string, string][]): Buffer {
    return Buffer.concat(fields.map(([name, value]) => this.#field(name, value)));
  }

  #field(name: string, value: string): Buffer {
    const exact = this.#find((n, v) => n === name && v === value);
    if (exact > 0) return indexed(exact);
    const named = this.#find((n) => n === name);
    const block = literalIndexed(named > 0 ? named : name, value, true);
    const size = name.length + value.length + 32;
    this.#table.unshift([name, value]);
    this.#bytes += size;
    while (this.#bytes > 4096) {
      const [n, v] = this.#table.pop()!;
      this.#bytes -= n.length + v.length + 32;
    }
    return block;
  }

  #find(match: (name: string, value: string) => boolean): number {
    const s = staticTable.findIndex(([n, v]) => match(n, v));
    if (s >= 0) return s + 1;
    const d = this.#table.findIndex(([n, v]) => match(n, v));
    return d >= 0 ? 62 + d : 0;
  }
}

function grpcGoBlocks(count: number): Buffer[] {
  const encoder = new GoLikeEncoder();
  return Array.from({ length: count }, (_, i) =>
    encoder.encode([
      [':method', 'POST'], [':scheme', 'http'], [':path', '/etcdserverpb.KV/Range'], [':authority', '127.0.0.1:2379'],
      ['content-type', 'application/grpc'], ['user-agent', 'grpc-go/1.26.0'], ['te', 'trailers'],
      ['grpc-timeout', `${4_999_000 + ((i * 7919) % 1000)}u`], // a 5 s deadline less the time to send: 8 digits + unit
    ]),
  );
}

function nsPer(run: () => number): number {
  // Warm-up: let the JIT settle first (a fixed count was too short for the cheapest case, the constructor).
  const warmUntil = performance.now() + warmUpMs;
  while (performance.now() < warmUntil) run();
  const start = process.hrtime.bigint();
  let blocks = 0;
  for (let r = 0; r < rounds; r++) blocks += run();
  return Number(process.hrtime.bigint() - start) / blocks;
}

const blocks = grpcGoBlocks(calls);
const first = blocks[0]!;
/** Calls before the first eviction: after the first block, each adds only its grpc-timeout entry. */
const beforeEviction = 60;
let sink = 0;
const newDecoderNs = nsPer(() => {
  for (let i = 0; i < 100; i++) sink += new HpackDecoder(65536).tableLength;
  return 100;
});
const firstNs = nsPer(() => {
  for (let i = 0; i < 100; i++) sink += new HpackDecoder(65536).decode(first).fields.length;
  return 100;
});
const openingNs = nsPer(() => {
  for (let i = 0; i < 10; i++) {
    const decoder = new HpackDecoder(65536);
    for (let b = 0; b < beforeEviction; b++) sink += decoder.decode(blocks[b]!).fields.length;
  }
  return 10;
});
const sequenceNs = nsPer(() => {
  const decoder = new HpackDecoder(65536);
  for (const block of blocks) sink += decoder.decode(block).fields.length;
  return blocks.length;
});
const literalBlocks = blocks.filter((b) => b.length > 40).length - 1;
console.log(`grpc-go request blocks, ${calls} calls on one connection, ${rounds} rounds (node ${process.version})`);
console.log(`  new HpackDecoder: ${newDecoderNs.toFixed(0)} ns`);
console.log(`  first block (all literals, ${first.length} bytes), with a new decoder: ${firstNs.toFixed(0)} ns`);
const steadyNs = (openingNs - firstNs) / (beforeEviction - 1);
console.log(`  a steady-state block (${blocks[1]!.length} bytes, 7 indexed + a Huffman grpc-timeout): ${steadyNs.toFixed(0)} ns`);
console.log(`  all ${calls} blocks in order (${literalBlocks} re-send evicted fields as literals): ${sequenceNs.toFixed(0)} ns/block`);
if (sink === 0) console.log('');
