/**
 * Snapshots travel on their own connection, in chunks, so a multi-megabyte snapshot never sits in front of
 * heartbeats on the Raft stream (etcd does the same with a separate HTTP POST).
 *
 *   sender → SnapHeader { message: MsgSnap without data, totalBytes }
 *   sender → SnapChunk × ⌈totalBytes / chunk⌉   (raw bytes)
 *   sender → SnapDone {}
 *   receiver → SnapAck { ok, error? }   once the application has taken the snapshot
 */
import type { Message, NodeId, Snapshot } from '../../raft/types.js';
import { type FramedConnection } from './connection.js';
import { type Frame, FrameType, ProtocolError, decodePayload } from './frame.js';

/** Streams `message.snapshot` in chunks and waits for the receiver's acknowledgement. */
export async function streamSnapshot(
  conn: FramedConnection,
  message: Message,
  chunkBytes: number,
  ackTimeoutMs: number,
): Promise<void> {
  const snapshot = message.snapshot as Snapshot;
  const data = snapshot.data;
  const header: Message = { ...message, snapshot: { meta: snapshot.meta, data: new Uint8Array(0) } };
  conn.send(FrameType.SnapHeader, { message: header, totalBytes: data.length });
  for (let offset = 0; offset < data.length; offset += chunkBytes) {
    if (conn.closed) throw new Error('snapshot connection closed while sending');
    conn.sendRaw(FrameType.SnapChunk, data.subarray(offset, Math.min(data.length, offset + chunkBytes)));
    // Keep a few chunks in flight (the chunks are views of `data`, so this costs no memory), but never the
    // whole snapshot: waiting on every chunk would stall the pipe once per chunk.
    if (conn.socket.writableLength >= 4 * chunkBytes) await waitDrain(conn);
  }
  conn.send(FrameType.SnapDone, {});
  const ack = await conn.nextFrame(ackTimeoutMs, 'snapshot acknowledgement');
  if (ack.type !== FrameType.SnapAck) throw new ProtocolError(`expected snapshot ack, got frame type ${ack.type}`);
  const body = decodePayload(ack) as { ok?: unknown; error?: unknown };
  if (body.ok !== true) throw new Error(`peer rejected the snapshot: ${String(body.error)}`);
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

/** Receives one snapshot: resolves with the MsgSnap (snapshot attached) once every byte arrived. */
export function receiveSnapshot(conn: FramedConnection, from: NodeId, idleTimeoutMs: number): Promise<Message> {
  return new Promise<Message>((resolve, reject) => {
    let header: Message | undefined;
    let totalBytes = 0;
    let received = 0;
    const chunks: Buffer[] = [];
    let timer = setTimeout(onIdle, idleTimeoutMs);
    function onIdle(): void {
      conn.destroy(new Error(`snapshot from ${from.toString(16)} stalled for ${idleTimeoutMs} ms`));
    }
    conn.onClose((err) => {
      clearTimeout(timer);
      reject(err ?? new Error('snapshot connection closed before the snapshot was complete'));
    });
    const fail = (message: string): void => conn.destroy(new ProtocolError(message));
    conn.setHandler((frame: Frame) => {
      clearTimeout(timer);
      timer = setTimeout(onIdle, idleTimeoutMs);
      if (frame.type === FrameType.SnapHeader && header === undefined) {
        const body = decodePayload(frame) as { message?: Message; totalBytes?: unknown };
        const message = body.message;
        if (message === undefined || message.snapshot === undefined || typeof body.totalBytes !== 'number') {
          return fail('malformed snapshot header');
        }
        if (message.from !== from) return fail('snapshot header names another sender');
        header = message;
        totalBytes = body.totalBytes;
      } else if (frame.type === FrameType.SnapChunk && header !== undefined) {
        received += frame.payload.length;
        if (received > totalBytes) return fail('snapshot longer than announced');
        chunks.push(frame.payload);
      } else if (frame.type === FrameType.SnapDone && header !== undefined) {
        clearTimeout(timer);
        if (received !== totalBytes) return fail(`snapshot ended at ${received} of ${totalBytes} bytes`);
        conn.setHandler(undefined);
        const snapshot = header.snapshot as Snapshot;
        resolve({ ...header, snapshot: { meta: snapshot.meta, data: Buffer.concat(chunks, totalBytes) } });
      } else {
        fail(`unexpected frame type ${frame.type} in a snapshot stream`);
      }
    });
  });
}
