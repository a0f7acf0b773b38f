/** etcdserverpb.Maintenance (etcd's api/v3rpc/maintenance.go): alarms, status, defrag, hashes, snapshot. */
import { createHash } from 'node:crypto';
import type { ServerWritableStream, UntypedServiceImplementation } from '@grpc/grpc-js';
import type { AlarmType } from '../../mvcc/types.js';
import type { AlarmAction, EtcdApi, SnapshotSource } from '../../node/server-api.js';
import { EtcdError, etcdErrors } from '../../node/errors.js';
import { failStream, requestContext, unary, unimplementedUnary } from './call.js';
import { encodeHeader, i64, id, long, n64, num } from './messages.js';
import type { Wire } from './proto.js';
import { etcdVersion } from '../../node/maintenance/maintenance-ops.js';

/** The version Status reports (maintenance-ops.ts says why 3.5.17). */
export { etcdVersion };

const alarmActions: AlarmAction[] = ['get', 'activate', 'deactivate'];
const alarmTypes: AlarmType[] = ['NONE', 'NOSPACE', 'CORRUPT'];

/** etcd streams its database in 32 KiB blobs. */
export const snapshotChunkBytes = 32 * 1024;
/** etcdctl's snapshot check: a saved file is `n * 512` bytes of data followed by their 32-byte SHA-256. */
const snapshotAlignBytes = 512;

export function maintenanceService(api: EtcdApi): UntypedServiceImplementation {
  return {
    Alarm: unary(api, async (m, ctx) => {
      const action = alarmActions[m.action as number];
      const alarm = alarmTypes[m.alarm as number];
      // etcd ignores an unknown action or alarm type and answers with no alarms.
      if (action === undefined || alarm === undefined) return { header: encodeHeader(api.header()) };
      const alarms = await api.alarm({ action, memberId: id(m.memberID, false), alarm }, ctx);
      return {
        header: encodeHeader(api.header()),
        alarms: alarms.map((a) => ({ memberID: long(a.memberId), alarm: alarmTypes.indexOf(a.alarm) || undefined })),
      };
    }),
    Status: unary(api, async (_m, ctx) => {
      const s = await api.status(ctx);
      const errors = s.leader === 0n ? [etcdErrors.noLeader.message, ...s.errors] : s.errors;
      return {
        header: encodeHeader(api.header()),
        version: etcdVersion,
        dbSize: n64(s.dbSizeBytes, 'dbSize'),
        leader: long(s.leader),
        raftIndex: n64(s.raftIndex, 'raftIndex'),
        raftTerm: n64(s.raftTerm, 'raftTerm'),
        raftAppliedIndex: n64(s.raftAppliedIndex, 'raftAppliedIndex'),
        errors,
        dbSizeInUse: n64(s.dbSizeInUseBytes, 'dbSizeInUse'),
        isLearner: s.isLearner || undefined,
      };
    }, () => true),
    Defragment: unary(api, async (_m, ctx) => {
      await api.defragment(ctx);
      // etcd (3.4 to 3.6) answers an empty DefragmentResponse: no header at all.
      return {};
    }),
    Hash: unary(api, async (_m, ctx) => {
      const r = await api.hash(ctx);
      return { header: encodeHeader(api.header(r.revision)), hash: r.hash >>> 0 || undefined };
    }),
    HashKV: unary(api, async (m, ctx) => {
      const revision = num(m.revision);
      if (revision < 0) throw new EtcdError('compacted');
      const r = await api.hashKV(revision, ctx);
      return {
        // etcd's header carries the store's current revision (HashByRev's currentRev), the hashed one is hash_revision.
        header: encodeHeader(api.header()),
        hash: r.hash >>> 0 || undefined,
        compactRevision: i64(r.compactRevision),
        hashRevision: n64(r.revision, 'hashRevision'),
      };
    }),
    Snapshot: (call: ServerWritableStream<Wire, Wire>) => void snapshot(api, call),
    MoveLeader: unary(api, async (m, ctx) => {
      await api.moveLeader(id(m.targetID, false), ctx);
      return { header: encodeHeader(api.header()) };
    }),
    Downgrade: unimplementedUnary('Maintenance.Downgrade'),
  };
}

function drained(call: ServerWritableStream<Wire, Wire>, signal: AbortSignal): Promise<void> {
  return new Promise<void>((resolve) => {
    const done = (): void => {
      call.off('drain', done);
      signal.removeEventListener('abort', done);
      resolve();
    };
    call.on('drain', done);
    signal.addEventListener('abort', done);
  });
}

/** Zero bytes that bring `sizeBytes` to a multiple of 512. */
export function snapshotPaddingBytes(sizeBytes: number): number {
  return (snapshotAlignBytes - (sizeBytes % snapshotAlignBytes)) % snapshotAlignBytes;
}

async function snapshot(api: EtcdApi, call: ServerWritableStream<Wire, Wire>): Promise<void> {
  const ctx = requestContext(call);
  try {
    const source = await api.snapshot(ctx);
    await streamSnapshot(source, call, ctx.signal);
    ctx.finish();
    if (!call.cancelled) call.end();
  } catch (err) {
    ctx.finish();
    if (!call.cancelled) failStream(call, err);
  }
}

/** Rechunks to 32 KiB blobs with remaining_bytes counting down, pads, then sends the SHA-256 as etcd does. */
async function streamSnapshot(
  source: SnapshotSource,
  call: ServerWritableStream<Wire, Wire>,
  signal: AbortSignal,
): Promise<void> {
  const padding = snapshotPaddingBytes(source.sizeBytes);
  const total = source.sizeBytes + padding;
  const hash = createHash('sha256');
  let sent = 0;
  let pending = Buffer.alloc(0);
  const send = async (blob: Buffer): Promise<void> => {
    if (signal.aborted) return;
    hash.update(blob);
    sent += blob.length;
    const more = call.write({ remainingBytes: total - sent || undefined, blob });
    if (!more && !signal.aborted) await drained(call, signal);
  };
  let received = 0;
  for await (const chunk of source.chunks) {
    if (signal.aborted) return;
    received += chunk.length;
    pending = pending.length === 0 ? Buffer.from(chunk) : Buffer.concat([pending, chunk]);
    while (pending.length >= snapshotChunkBytes) {
      await send(pending.subarray(0, snapshotChunkBytes));
      pending = pending.subarray(snapshotChunkBytes);
    }
  }
  if (received !== source.sizeBytes) {
    throw new Error(`snapshot source yielded ${received} bytes, announced ${source.sizeBytes}`);
  }
  pending = Buffer.concat([pending, Buffer.alloc(padding)]);
  while (pending.length > 0) {
    if (signal.aborted) return;
    await send(pending.subarray(0, snapshotChunkBytes));
    pending = pending.subarray(snapshotChunkBytes);
  }
  // etcd 3.5 sends no header on snapshot messages; the digest is the last blob, remaining_bytes 0.
  call.write({ blob: hash.digest() });
}
