/**
 * The TLS settings shared by client and peer listeners (etcd --cipher-suites, --tls-min-version,
 * --tls-max-version, and the CRL files), as Node TLS options, plus etcd's log line for a refused handshake.
 */
import { readFileSync } from 'node:fs';
import type { Socket } from 'node:net';
import type { SecureContextOptions } from 'node:tls';
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
export function logRejectedHandshake(logger: Logger, error: Error, socket: Socket): void {
  logger.warn('rejected connection', {
    'remote-addr': `${socket.remoteAddress ?? '?'}:${socket.remotePort ?? '?'}`,
    'server-name': (socket as Socket & { servername?: string }).servername ?? '',
    error: error.message,
  });
}
