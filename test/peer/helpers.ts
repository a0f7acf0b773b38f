import type { Message, NodeId } from '../../src/raft/types.js';
import { type Logger, createLogger } from '../../src/config/log.js';
import { PeerTransport } from '../../src/peer/index.js';
import type { PeerInbound, PeerTransportOptions } from '../../src/peer/index.js';

export const token = 'test-join-token';

export async function waitFor(cond: () => boolean, what: string, timeoutMs = 10_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!cond()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 5));
  }
}

export function capturingLogger(): { logger: Logger; lines: Record<string, unknown>[] } {
  const lines: Record<string, unknown>[] = [];
  const logger = createLogger({ level: 'debug', sink: (line) => lines.push(JSON.parse(line) as Record<string, unknown>) });
  return { logger, lines };
}

export function heartbeat(from: NodeId, to: NodeId, commit: number): Message {
  return { type: 'MsgHeartbeat', from, to, term: 1, logTerm: 0, index: 0, entries: [], commit, reject: false, rejectHint: 0 };
}

export function append(from: NodeId, to: NodeId, index: number, data: Uint8Array): Message {
  return {
    type: 'MsgApp', from, to, term: 3, logTerm: 2, index, commit: index, reject: false, rejectHint: 0,
    entries: [{ term: 3, index: index + 1, type: 0, data }],
  };
}

export interface Node {
  id: NodeId;
  transport: PeerTransport;
  port: number;
  url: string;
  received: Message[];
  unreachable: NodeId[];
  lines: Record<string, unknown>[];
}

export async function startNode(
  id: NodeId,
  overrides: Partial<PeerTransportOptions & PeerInbound> = {},
  port = 0,
): Promise<Node> {
  const received: Message[] = [];
  const unreachable: NodeId[] = [];
  const { logger, lines } = capturingLogger();
  const { onMessages, onSnapshot, snapshotSink, onRequest, authorizePeer, ...options } = overrides;
  const transport = new PeerTransport({
    selfId: id,
    token,
    listenUrl: `http://127.0.0.1:${port}`,
    logger,
    onUnreachable: (peer) => unreachable.push(peer),
    limits: { reconnectDelayMsMin: 10, reconnectDelayMsMax: 100 },
    ...options,
  });
  const started = await transport.start({
    onMessages: onMessages ?? ((msgs) => received.push(...msgs)),
    ...(onSnapshot !== undefined ? { onSnapshot } : {}),
    ...(snapshotSink !== undefined ? { snapshotSink } : {}),
    ...(onRequest !== undefined ? { onRequest } : {}),
    ...(authorizePeer !== undefined ? { authorizePeer } : {}),
  });
  return { id, transport, port: started.port, url: `http://127.0.0.1:${started.port}`, received, unreachable, lines };
}

export function connectAll(nodes: Node[]): void {
  for (const a of nodes) for (const b of nodes) if (a !== b) a.transport.addPeer(b.id, [b.url]);
}
