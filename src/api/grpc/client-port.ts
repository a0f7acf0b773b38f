/**
 * One client port, two protocols, as etcd serves them (cmux): a connection whose first bytes are the HTTP/2
 * client preface goes to gRPC, anything else to the HTTP/1.1 server (/health, /version, /metrics, the JSON
 * gateway). On TLS the negotiated ALPN protocol decides ("h2" → gRPC, "http/1.1" → HTTP/1.1); a TLS client
 * that offered no ALPN is told apart by its first bytes like a cleartext one.
 */
import type { Socket } from 'node:net';
import * as tls from 'node:tls';

/** The bytes every HTTP/2 connection starts with; no HTTP/1.x request line can begin like this. */
const h2Preface = Buffer.from('PRI * HTTP/2.0', 'latin1');

export type ConnectionSink = (socket: Socket) => void;

/**
 * Calls `grpc` or `http1` with the socket, its first bytes put back. A client that sends nothing within
 * `sniffMs` is dropped (it holds a connection and speaks neither protocol).
 */
export function routeConnection(socket: Socket, grpc: ConnectionSink, http1: ConnectionSink, sniffMs: number): void {
  if (socket instanceof tls.TLSSocket && typeof socket.alpnProtocol === 'string') {
    (socket.alpnProtocol === 'h2' ? grpc : http1)(socket);
    return;
  }
  let seen: Buffer = Buffer.alloc(0);
  const timer = setTimeout(() => socket.destroy(), sniffMs);
  timer.unref();
  const decide = (sink: ConnectionSink): void => {
    clearTimeout(timer);
    socket.off('data', onData);
    socket.off('close', onClose);
    // Put the bytes back and let the new owner read them (its own 'data' listener does not undo our pause).
    socket.pause();
    socket.unshift(seen);
    sink(socket);
    socket.resume();
  };
  const onData = (chunk: Buffer): void => {
    seen = seen.length === 0 ? chunk : Buffer.concat([seen, chunk]);
    const n = Math.min(seen.length, h2Preface.length);
    if (!seen.subarray(0, n).equals(h2Preface.subarray(0, n))) decide(http1);
    else if (n === h2Preface.length) decide(grpc);
  };
  const onClose = (): void => clearTimeout(timer);
  socket.on('data', onData);
  socket.on('close', onClose);
  socket.once('error', () => socket.destroy());
}
