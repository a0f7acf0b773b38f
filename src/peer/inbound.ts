/**
 * Checks on what arrives from an authenticated peer, and the request/response exchange. A peer that sends
 * something malformed loses its connection (and reconnects); it never reaches Raft.
 */
import { MessageType, type Message, type NodeId } from '../raft/types.js';
import type { Logger } from '../config/log.js';
import type { FramedConnection } from './connection.js';
import { FrameType, decodePayload } from './frame.js';
import { hex } from '../base/hex.js';
import { peerProbeConnectionIdleMs } from '../base/limits.js';
import type { PeerInbound, PeerRequest, PeerResponse } from './types.js';

const messageTypes = new Set<string>(Object.values(MessageType));

/** The messages of a Messages frame, or undefined if any is malformed or not from `from` to `self`. */
export function validateMessages(value: unknown, from: NodeId, self: NodeId): Message[] | undefined {
  if (!Array.isArray(value)) return undefined;
  for (const m of value as Partial<Message>[]) {
    if (typeof m !== 'object' || m === null) return undefined;
    if (typeof m.type !== 'string' || !messageTypes.has(m.type)) return undefined;
    if (m.from !== from || m.to !== self) return undefined;
    if (typeof m.term !== 'number' || typeof m.index !== 'number' || typeof m.commit !== 'number') return undefined;
    if (!Array.isArray(m.entries)) return undefined;
    if (m.dataDurableIndex !== undefined && !(Number.isSafeInteger(m.dataDurableIndex) && m.dataDurableIndex >= 0)) return undefined;
    for (const e of m.entries) {
      if (typeof e !== 'object' || e === null || !(e.data instanceof Uint8Array)) return undefined;
    }
  }
  return value as Message[];
}

/** The request a prober sends (peer-prober.ts); the transport answers it itself. */
export const probeMethod = 'probe';

/**
 * Answers a `request` connection: one request, then the connection closes; except probes, which keep it open
 * for the prober's next one (closed once idle for peerProbeConnectionIdleMs).
 */
export async function serveRequest(
  conn: FramedConnection,
  from: NodeId,
  onRequest: PeerInbound['onRequest'],
  timeoutMs: number,
  logger: Logger,
): Promise<void> {
  for (let probes = 0; ; probes++) {
    let req: PeerRequest;
    try {
      const frame = await conn.nextFrame(probes === 0 ? timeoutMs : peerProbeConnectionIdleMs, 'peer request');
      const body = frame.type === FrameType.Request ? (decodePayload(frame) as PeerRequest) : undefined;
      if (body === undefined || typeof body !== 'object' || body === null || typeof body.method !== 'string') {
        throw new Error('malformed peer request');
      }
      req = body;
    } catch (err) {
      // A prober that went away, or stopped probing, is no failure.
      if (probes === 0) logger.warn('peer request failed', { peer: hex(from), error: (err as Error).message });
      return conn.destroy();
    }
    if (req.method === probeMethod) {
      conn.send(FrameType.Response, { ok: true }); // answered here, like etcd's /raft/probing: the round trip is the measure
      continue;
    }
    let response: PeerResponse;
    if (onRequest === undefined) {
      response = { ok: false, error: 'this member does not serve peer requests', code: 'unimplemented' };
    } else {
      try {
        response = await onRequest(req, { from, remoteAddress: conn.remoteAddress });
      } catch (err) {
        response = { ok: false, error: (err as Error).message };
      }
    }
    conn.send(FrameType.Response, response);
    conn.socket.end();
    return;
  }
}
