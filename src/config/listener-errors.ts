/**
 * A listening socket's errors after it listens. Node emits an accept failure on the server ('error' with
 * syscall 'accept': EMFILE or ENFILE when a connection flood exhausts the descriptors, ENOMEM, ECONNABORTED on
 * some systems), and an 'error' nobody listens for is an uncaught exception: a flood of connections would stop
 * the member. The listener keeps listening (libuv retries the accept on the next connection), so the error is
 * only logged, at counts 1, 2, 4, 8, … (a flood repeats it on every poll; the log grows with its logarithm).
 */
import type { Logger } from './log.js';

/** What this needs of a net.Server (and so of http, https and tls servers). */
export interface ListeningServer {
  on(event: 'error', listener: (error: Error) => void): unknown;
}

export function logListenerErrors(server: ListeningServer, logger: Logger | undefined, what: string): void {
  let count = 0;
  server.on('error', (error: NodeJS.ErrnoException) => {
    count++;
    if ((count & (count - 1)) !== 0) return;
    logger?.warn(`${what}: accepting a connection failed; still listening`, { error: error.code ?? error.message, times: count });
  });
}
