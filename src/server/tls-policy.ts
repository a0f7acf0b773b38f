/**
 * The TLS settings shared by client and peer listeners (etcd --cipher-suites, --tls-min-version,
 * --tls-max-version, and the CRL files), as Node TLS options, plus etcd's log line for a refused handshake.
 */
import { readFileSync } from 'node:fs';
import type { Socket } from 'node:net';
import type { SecureContextOptions, TLSSocket } from 'node:tls';
import type { Logger } from './log.js';
import type { TlsPolicy } from './member-options.js';

export function tlsPolicyOptions(policy: TlsPolicy | undefined, crlFile: string | undefined): SecureContextOptions {
  return {
    ...(policy?.ciphers !== undefined ? { ciphers: policy.ciphers } : {}),
    ...(policy !== undefined ? { minVersion: policy.minVersion } : {}),
    ...(policy?.maxVersion !== undefined ? { maxVersion: policy.maxVersion } : {}),
    ...(crlFile !== undefined ? { crl: readFileSync(crlFile) } : {}),
  };
}

/** etcd (embed/serve.go, transport listener) logs every refused TLS connection with the remote address. */
export function logRejectedHandshake(logger: Logger, error: Error | string, socket: Socket): void {
  const servername = (socket as Socket & { servername?: unknown }).servername;
  logger.warn('rejected connection', {
    'remote-addr': `${socket.remoteAddress ?? '?'}:${socket.remotePort ?? '?'}`,
    'server-name': typeof servername === 'string' ? servername : '',
    error: typeof error === 'string' ? error : error.message,
  });
}

/**
 * Listeners that require client certificates ask for one but verify it here, once the handshake is done:
 * Node's own refusal (rejectUnauthorized) only reports "socket hang up" and loses the peer's address, where
 * etcd logs why (e.g. a revoked certificate). An unverified connection is closed before anything is read.
 */
export function acceptVerifiedClient(socket: TLSSocket, logger: Logger | undefined): boolean {
  if (socket.authorized) return true;
  const reason = socket.authorizationError;
  const text = reason === undefined ? 'client certificate required' : `client certificate not accepted: ${String(reason)}`;
  if (logger !== undefined) logRejectedHandshake(logger, text, socket);
  socket.destroy();
  return false;
}
