/**
 * HTTP/1.1 parse errors on the client port, answered as etcd answers them. Node's parser reports a broken
 * body (a chunk length that is not hex, bad chunk framing, EOF before the declared length) to the server's
 * 'clientError', not to the request. While the gateway reads a unary request's body, etcd's grpc-gateway
 * answers such a body with its JSON 400 (Go's messages: "unexpected EOF", "invalid byte in chunk length",
 * "malformed chunked encoding"); anywhere else, as Node does by default: a bare status, and the connection
 * closed. Either way the connection ends; the request's own handlers see it as cut (request-body.ts).
 */
import type { Duplex } from 'node:stream';

const readingBody = new WeakSet<Duplex>();

/** The gateway reads a unary body on `socket` (until the read settles). */
export function readingGatewayBody(socket: Duplex, reading: boolean): void {
  if (reading) readingBody.add(socket);
  else readingBody.delete(socket);
}

/** Go's error for each llhttp error Node reports inside a body. */
function goBodyError(code: string | undefined): string {
  if (code === 'HPE_INVALID_EOF_STATE') return 'unexpected EOF';
  if (code === 'HPE_INVALID_CHUNK_SIZE') return 'invalid byte in chunk length';
  return 'malformed chunked encoding';
}

/** Node's own default answers (http server's socketOnError). */
function nodeDefault(code: string | undefined): string {
  if (code === 'HPE_HEADER_OVERFLOW') return 'HTTP/1.1 431 Request Header Fields Too Large\r\nConnection: close\r\n\r\n';
  if (code === 'ERR_HTTP_REQUEST_TIMEOUT') return 'HTTP/1.1 408 Request Timeout\r\nConnection: close\r\n\r\n';
  return 'HTTP/1.1 400 Bad Request\r\nConnection: close\r\n\r\n';
}

/** The server's 'clientError' listener: answers if nothing was written on the connection yet, then ends it. */
export function answerClientError(err: Error & { code?: string }, socket: Duplex & { bytesWritten?: number }): void {
  if (socket.writable && (socket.bytesWritten ?? 0) === 0 && err.code !== 'ECONNRESET') {
    if (readingBody.has(socket)) {
      const message = goBodyError(err.code);
      const body = JSON.stringify({ error: message, message, code: 3 });
      socket.write(
        'HTTP/1.1 400 Bad Request\r\nAccess-Control-Allow-Headers: accept, content-type, authorization\r\n' +
        'Access-Control-Allow-Methods: POST, GET, OPTIONS, PUT, DELETE\r\nAccess-Control-Allow-Origin: *\r\n' +
        `Content-Type: application/json\r\nContent-Length: ${Buffer.byteLength(body)}\r\nConnection: close\r\n\r\n${body}`,
      );
    } else socket.write(nodeDefault(err.code));
  }
  socket.destroy();
}
