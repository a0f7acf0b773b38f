/**
 * etcd's server keepalive (--grpc-keepalive-interval, --grpc-keepalive-timeout; grpc-go's keepalive.ServerParameters
 * Time and Timeout): every `intervalMs` the server pings the client; a ping not answered within `timeoutMs`
 * closes the connection, so a vanished client's calls (watches, keep-alives) end. The next ping is scheduled
 * from the answer, as grpc-js does, so one connection never has two pings in flight.
 */
import type { Http2Session } from 'node:http2';

export function keepSessionAlive(session: Http2Session, intervalMs: number, timeoutMs: number): void {
  let timer: NodeJS.Timeout | undefined;
  const stop = (): void => {
    if (timer !== undefined) clearTimeout(timer);
    timer = undefined;
  };
  const schedule = (): void => {
    timer = setTimeout(ping, intervalMs);
    timer.unref();
  };
  const ping = (): void => {
    if (session.closed || session.destroyed) return;
    let answered = false;
    timer = setTimeout(() => {
      if (!answered) session.destroy();
    }, timeoutMs);
    timer.unref();
    try {
      const sent = session.ping((err) => {
        answered = true;
        stop();
        if (err === null) schedule();
      });
      if (!sent) session.destroy();
    } catch {
      session.destroy();
    }
  };
  session.once('close', stop);
  schedule();
}
