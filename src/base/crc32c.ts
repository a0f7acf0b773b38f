/**
 * CRC-32C (Castagnoli, reflected polynomial 0x82F63B78), the checksum etcd's WAL uses. Node 20 has no crc32c,
 * so this is a table-driven "slice-by-8" implementation: eight 256-entry tables let the loop consume eight
 * bytes per step, which is several times faster than the byte-at-a-time loop on the WAL's hot path.
 *
 * `crc32c(b, crc32c(a)) === crc32c(concat(a, b))`: the pre/post inversion is done per call, so a checksum can
 * be continued over several pieces without copying them together.
 */

const polynomial = 0x82f63b78;

function buildTables(): Uint32Array[] {
  const tables: Uint32Array[] = [];
  const t0 = new Uint32Array(256);
  for (let n = 0; n < 256; n++) {
    let c = n;
    for (let k = 0; k < 8; k++) c = c & 1 ? (c >>> 1) ^ polynomial : c >>> 1;
    t0[n] = c >>> 0;
  }
  tables.push(t0);
  for (let t = 1; t < 8; t++) {
    const prev = tables[t - 1]!;
    const cur = new Uint32Array(256);
    for (let n = 0; n < 256; n++) cur[n] = (prev[n]! >>> 8) ^ t0[prev[n]! & 0xff]!;
    tables.push(cur);
  }
  return tables;
}

const [t0, t1, t2, t3, t4, t5, t6, t7] = buildTables() as [
  Uint32Array, Uint32Array, Uint32Array, Uint32Array, Uint32Array, Uint32Array, Uint32Array, Uint32Array,
];

/** CRC-32C of `data[start, end)`, continuing from `crc` (the result of a previous call, 0 to start). */
export function crc32c(data: Uint8Array, crc = 0, start = 0, end = data.length): number {
  let c = ~crc >>> 0;
  let i = start;
  // Eight bytes per step; the table lookups read only in-range indexes, so the `!`s are safe.
  for (; i + 8 <= end; i += 8) {
    const lo = (c ^ (data[i]! | (data[i + 1]! << 8) | (data[i + 2]! << 16) | (data[i + 3]! << 24))) >>> 0;
    const hi = data[i + 4]! | (data[i + 5]! << 8) | (data[i + 6]! << 16) | (data[i + 7]! << 24);
    c =
      t7[lo & 0xff]! ^
      t6[(lo >>> 8) & 0xff]! ^
      t5[(lo >>> 16) & 0xff]! ^
      t4[lo >>> 24]! ^
      t3[hi & 0xff]! ^
      t2[(hi >>> 8) & 0xff]! ^
      t1[(hi >>> 16) & 0xff]! ^
      t0[hi >>> 24]!;
  }
  for (; i < end; i++) c = t0[(c ^ data[i]!) & 0xff]! ^ (c >>> 8);
  return ~c >>> 0;
}
