/**
 * Bytes on a raw TCP connection, for requests no HTTP client would send: cut bodies, broken framing, early
 * disconnects. Everything is bounded in time and the socket is always destroyed.
 */
import { connect } from 'node:net';

export interface RawOptions {
  /** After sending: 'close' drops the connection (a client that gave up), 'half' half-closes it (EOF). */
  then: 'close' | 'half' | 'wait';
  /** How long to read an answer (and, for 'close', to wait before closing). */
  waitMs?: number;
}

/** Sends `bytes` to 127.0.0.1:`port`; resolves with whatever came back before the end or `waitMs`. */
export function sendRaw(port: number, bytes: Buffer | string, o: RawOptions): Promise<string> {
  const waitMs = o.waitMs ?? 300;
  return new Promise((resolve) => {
    const socket = connect(port, '127.0.0.1');
    const got: Buffer[] = [];
    let done = false;
    const finish = (): void => {
      if (done) return;
      done = true;
      clearTimeout(timer);
      socket.destroy();
      resolve(Buffer.concat(got).toString('latin1'));
    };
    const timer = setTimeout(finish, waitMs);
    socket.on('data', (d: Buffer) => got.push(d));
    socket.on('error', finish);
    socket.on('close', finish);
    socket.on('connect', () => {
      socket.write(bytes);
      if (o.then === 'half') socket.end();
    });
  });
}

/** The status code of the first HTTP/1.1 answer in `text`, or undefined when none came. */
export function statusOf(text: string): number | undefined {
  const m = /^HTTP\/1\.1 (\d{3})/.exec(text);
  return m ? Number(m[1]) : undefined;
}
