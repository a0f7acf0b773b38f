/**
 * Snapshots travel on their own connection, in chunks, so a multi-megabyte snapshot never sits in front of
 * heartbeats on the Raft stream (etcd does the same with a separate HTTP POST).
 *
 *   sender → SnapHeader { message: MsgSnap without data, totalBytes }
 *   sender → SnapChunk × ⌈totalBytes / chunk⌉   (raw bytes)
 *   sender → SnapDone {}
 *   receiver → SnapAck { ok, error? }   once the application has taken the snapshot
 */
import { snapshotReceiveQueuedBytesMax } from '../base/limits.js';
import type { Message, NodeId, Snapshot } from '../raft/types.js';
import { type FramedConnection } from './connection.js';
import type { SnapshotSink } from './types.js';
import { type Frame, FrameType, ProtocolError, decodeOrUndefined, decodePayload } from './frame.js';

/** Total bytes announced for a streamed snapshot whose length is not known in advance. */
export const unknownSnapshotBytes = -1;

/**
 * Streams `message.snapshot` in chunks, or the bytes of `source` when given (then the length is not announced
 * and the snapshot's data field is ignored), and waits for the receiver's acknowledgement. Returns the bytes sent.
 */
export async function streamSnapshot(
  conn: FramedConnection,
  message: Message,
  chunkBytes: number,
  ackTimeoutMs: number,
  source?: AsyncIterable<Uint8Array>,
): Promise<number> {
  const snapshot = message.snapshot as Snapshot;
  const data = snapshot.data;
  const header: Message = { ...message, snapshot: { meta: snapshot.meta, data: new Uint8Array(0) } };
  conn.send(FrameType.SnapHeader, { message: header, totalBytes: source === undefined ? data.length : unknownSnapshotBytes });
  let sent = 0;
  const sendChunk = async (chunk: Uint8Array): Promise<void> => {
    if (conn.closed) throw new Error('snapshot connection closed while sending');
    conn.sendRaw(FrameType.SnapChunk, chunk);
    sent += chunk.length;
    // Keep a few chunks in flight, but never the whole snapshot: waiting on every chunk would stall the
    // pipe once per chunk, and not waiting would buffer the key space in the socket.
    if (conn.socket.writableLength >= 4 * chunkBytes) await waitDrain(conn);
  };
  if (source === undefined) {
    for (let offset = 0; offset < data.length; offset += chunkBytes) await sendChunk(data.subarray(offset, Math.min(data.length, offset + chunkBytes)));
  } else {
    for await (const part of source) {
      for (let offset = 0; offset < part.length; offset += chunkBytes) await sendChunk(part.subarray(offset, Math.min(part.length, offset + chunkBytes)));
    }
  }
  conn.send(FrameType.SnapDone, {});
  const ack = await conn.nextFrame(ackTimeoutMs, 'snapshot acknowledgement');
  if (ack.type !== FrameType.SnapAck) throw new ProtocolError(`expected snapshot ack, got frame type ${ack.type}`);
  const body = decodePayload(ack) as { ok?: unknown; error?: unknown };
  if (body.ok !== true) throw new Error(`peer rejected the snapshot: ${String(body.error)}`);
  return sent;
}

function waitDrain(conn: FramedConnection): Promise<void> {
  return new Promise<void>((resolve, reject) => {
    const onDrain = (): void => resolve();
    conn.socket.once('drain', onDrain);
    conn.onClose((err) => {
      conn.socket.off('drain', onDrain);
      reject(err ?? new Error('snapshot connection closed while sending'));
    });
  });
}

/**
 * Receives one snapshot: resolves with the MsgSnap once every byte arrived. With a sink, the bytes go to it
 * as they come (chunks are written in order, one at a time) and the MsgSnap carries empty data; without
 * one, they are gathered and attached as the snapshot's data.
 */
export function receiveSnapshot(conn: FramedConnection, from: NodeId, idleTimeoutMs: number, sink?: SnapshotSink): Promise<Message> {
  return new Promise<Message>((resolve, reject) => {
    let header: Message | undefined;
    let totalBytes = 0;
    let received = 0;
    const chunks: Buffer[] = [];
    let target: Awaited<ReturnType<SnapshotSink['open']>> | undefined;
    /** Sink work, in frame order. */
    let writes: Promise<void> = Promise.resolve();
    let queuedBytes = 0;
    let failed = false;
    let timer = setTimeout(onIdle, idleTimeoutMs);
    function onIdle(): void {
      conn.destroy(new Error(`snapshot from ${from.toString(16)} stalled for ${idleTimeoutMs} ms`));
    }
    const abort = (err: unknown): void => {
      if (failed) return;
      failed = true;
      clearTimeout(timer);
      // After the sink's queued work, failed or not: a write the sink refused (no room on the disk) must not
      // leave its partial file behind for every retry of the leader to add another.
      void writes.catch(() => {}).then(() => target?.abort()).catch(() => {});
      reject(err);
    };
    conn.onClose((err) => abort(err ?? new Error('snapshot connection closed before the snapshot was complete')));
    const fail = (message: string): void => conn.destroy(new ProtocolError(message));
    const queue = (work: () => Promise<void>): void => {
      writes = writes.then(work);
      writes.catch((err: unknown) => conn.destroy(err instanceof Error ? err : new Error(String(err))));
    };
    conn.setHandler((frame: Frame) => {
      clearTimeout(timer);
      timer = setTimeout(onIdle, idleTimeoutMs);
      if (frame.type === FrameType.SnapHeader && header === undefined) {
        const body = decodeOrUndefined(frame) as { message?: Message; totalBytes?: unknown } | undefined;
        const message = body?.message;
        const announcedBytes = body?.totalBytes;
        if (message === undefined || message.snapshot === undefined || typeof announcedBytes !== 'number') {
          return fail('malformed snapshot header');
        }
        if (message.from !== from) return fail('snapshot header names another sender');
        header = message;
        totalBytes = announcedBytes;
        if (sink !== undefined) queue(async () => void (target = await sink.open(message)));
      } else if (frame.type === FrameType.SnapChunk && header !== undefined) {
        received += frame.payload.length;
        if (totalBytes !== unknownSnapshotBytes && received > totalBytes) return fail('snapshot longer than announced');
        const chunk = frame.payload;
        if (sink === undefined) {
          chunks.push(chunk);
          return;
        }
        queuedBytes += chunk.length;
        if (queuedBytes > snapshotReceiveQueuedBytesMax) conn.socket.pause();
        queue(async () => {
          await target!.write(chunk);
          queuedBytes -= chunk.length;
          if (queuedBytes <= snapshotReceiveQueuedBytesMax / 2 && conn.socket.isPaused()) conn.socket.resume();
        });
      } else if (frame.type === FrameType.SnapDone && header !== undefined) {
        clearTimeout(timer);
        if (totalBytes !== unknownSnapshotBytes && received !== totalBytes) return fail(`snapshot ended at ${received} of ${totalBytes} bytes`);
        conn.setHandler(undefined);
        const snapshot = header.snapshot as Snapshot;
        if (sink === undefined) return resolve({ ...header, snapshot: { meta: snapshot.meta, data: Buffer.concat(chunks, received) } });
        const done = header;
        queue(async () => {
          await target!.commit();
          resolve({ ...done, snapshot: { meta: snapshot.meta, data: new Uint8Array(0) } });
        });
      } else {
        fail(`unexpected frame type ${frame.type} in a snapshot stream`);
      }
    });
  });
}
