/**
 * Snapshot files: `<term:16 hex>-<index:16 hex>.snap`. Written as a temp file, fsynced, renamed, and the
 * directory fsynced, so a name always has complete contents; the log's SnapshotMeta record is written only
 * after that (the log never points at a snapshot that is not durable).
 *
 * Layout: 32-byte header (magic "ETCESNAP", u32 version, u32 CRC-32C of the body, f64 body length, zeros),
 * then the body: msgpack [index, term, voters[], learners[], data].
 */
import { Packr } from 'msgpackr';
import { assert } from '../base/assert.js';
import type { Snapshot, SnapshotMeta } from '../raft/types.js';
import { crc32c } from './crc32c.js';
import { WalCorruptError } from './errors.js';
import { writeFileAtomically } from './atomic-file.js';
import type { FsPort } from './fs-port.js';
import { snapshotMetaArray, snapshotMetaFrom } from './record.js';

const magic = Buffer.from('ETCESNAP', 'latin1');
const headerBytes = 32;
const version = 1;
const packr = new Packr({ useRecords: false, structuredClone: false });
const unpackr = new Packr({ useRecords: false, structuredClone: false, copyBuffers: true });

const hex16 = (n: number): string => n.toString(16).padStart(16, '0');

export function snapshotFileName(term: number, index: number): string {
  return `${hex16(term)}-${hex16(index)}.snap`;
}

export function parseSnapshotFileName(name: string): { term: number; index: number } | undefined {
  const m = /^([0-9a-f]{16})-([0-9a-f]{16})\.snap$/.exec(name);
  return m ? { term: Number.parseInt(m[1]!, 16), index: Number.parseInt(m[2]!, 16) } : undefined;
}

/** Body: [index, term, voters, learners, data], then witnesses when there are some (record.ts snapshotMetaArray). */
export function encodeSnapshotFile(s: Snapshot): Buffer {
  const [index, term, voters, learners, ...witnesses] = snapshotMetaArray(s.meta);
  const body = packr.pack([index, term, voters, learners, s.data, ...witnesses]);
  const out = Buffer.alloc(headerBytes + body.length);
  magic.copy(out, 0);
  out.writeUInt32LE(version, 8);
  out.writeUInt32LE(crc32c(body), 12);
  out.writeDoubleLE(body.length, 16);
  body.copy(out, headerBytes);
  return out;
}

export function decodeSnapshotFile(buf: Uint8Array, file: string): Snapshot {
  const b = Buffer.from(buf.buffer, buf.byteOffset, buf.length);
  if (b.length < headerBytes || !b.subarray(0, 8).equals(magic)) throw new WalCorruptError(file, 0, 'not a snapshot file');
  if (b.readUInt32LE(8) !== version) throw new WalCorruptError(file, 8, `unsupported snapshot version ${b.readUInt32LE(8)}`);
  const length = b.readDoubleLE(16);
  if (length !== b.length - headerBytes) throw new WalCorruptError(file, 16, 'snapshot length does not match the file');
  const body = b.subarray(headerBytes);
  if (crc32c(body) !== b.readUInt32LE(12)) throw new WalCorruptError(file, headerBytes, 'snapshot CRC mismatch');
  const value: unknown = unpackr.unpack(body);
  if (!Array.isArray(value) || (value.length !== 5 && value.length !== 6) || !(value[4] instanceof Uint8Array)) {
    throw new WalCorruptError(file, headerBytes, 'snapshot body has the wrong shape');
  }
  try {
    return { meta: snapshotMetaFrom([...value.slice(0, 4), ...value.slice(5)]), data: value[4] };
  } catch (err) {
    throw new WalCorruptError(file, headerBytes, (err as Error).message);
  }
}

/** Temp file, fsync, rename, directory fsync. Returns the file name. */
export async function writeSnapshotFile(fs: FsPort, dir: string, s: Snapshot): Promise<string> {
  const name = snapshotFileName(s.meta.term, s.meta.index);
  await writeFileAtomically(fs, `${dir}/${name}`, encodeSnapshotFile(s));
  return name;
}

/** The snapshot file of `meta` (the latest durable snapshot), if it is still there. */
export async function loadSnapshotFile(fs: FsPort, dir: string, meta: SnapshotMeta): Promise<Snapshot | undefined> {
  if (meta.index === 0) return undefined;
  const path = `${dir}/${snapshotFileName(meta.term, meta.index)}`;
  const bytes = await fs.readFile(path);
  if (bytes === undefined) return undefined;
  const snapshot = decodeSnapshotFile(bytes, path);
  assert(snapshot.meta.index === meta.index && snapshot.meta.term === meta.term, 'snapshot file does not match its name');
  return snapshot;
}

/** Keep the durable snapshot and the one before it; anything older is unreachable. */
export async function removeOldSnapshotFiles(fs: FsPort, dir: string, durableIndex: () => number, logger: ((line: string) => void) | undefined): Promise<void> {
  const names = await fs.list(dir).catch(() => [] as string[]);
  const snaps = names.flatMap((name) => {
    const p = parseSnapshotFileName(name);
    return p && p.index < durableIndex() ? [{ name, index: p.index }] : [];
  });
  snaps.sort((a, b) => b.index - a.index);
  for (const s of snaps.slice(1)) {
    await fs.unlink(`${dir}/${s.name}`).catch((err: unknown) => {
      logger?.(`wal: could not remove old snapshot ${s.name}: ${String(err)}`);
    });
  }
}
