/**
 * The TLS settings shared by client and peer listeners (etcd --cipher-suites, --tls-min-version,
 * --tls-max-version) as Node TLS options, etcd's log line for a refused handshake, and the checks of a client
 * certificate after the handshake (CA, revocation as etcd checks it in crl.ts, allowed CN and hostname).
 */
import type { Socket } from 'node:net';
import { checkServerIdentity, type SecureContextOptions, type TLSSocket } from 'node:tls';
import type { Logger } from '../config/log.js';
import type { TlsPolicy } from '../config/member-options.js';
import { crlFileAt, revocation, type PresentedCertificate } from './crl.js';

export function tlsPolicyOptions(policy: TlsPolicy | undefined): SecureContextOptions {
  return {
    ...(policy?.ciphers !== undefined ? { ciphers: policy.ciphers } : {}),
    ...(policy !== undefined ? { minVersion: policy.minVersion } : {}),
    ...(policy?.maxVersion !== undefined ? { maxVersion: policy.maxVersion } : {}),
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
 * etcd logs why (e.g. a revoked certificate). Then etcd's allowed CN / hostname checks. An unverified
 * connection is closed before anything is read from it.
 */
export function acceptVerifiedClient(socket: TLSSocket, logger: Logger | undefined, allowed: AllowedIdentities = {}): boolean {
  const reason = refusal(socket, allowed);
  if (reason === undefined) return true;
  if (logger !== undefined) logRejectedHandshake(logger, reason, socket);
  socket.destroy();
  return false;
}

export interface AllowedIdentities {
  allowedCns?: readonly string[];
  allowedHostnames?: readonly string[];
  /** etcd --client-crl-file / --peer-crl-file: read again when it changed (crl.ts CrlFile), so an update counts without a restart. */
  crlFile?: string;
}

function refusal(socket: TLSSocket, allowed: AllowedIdentities): string | undefined {
  if (!socket.authorized) {
    const error = socket.authorizationError;
    return error === undefined ? 'client certificate required' : `client certificate not accepted: ${String(error)}`;
  }
  const cert = socket.getPeerCertificate(true);
  if (allowed.crlFile !== undefined) {
    let revoked: string | undefined;
    try {
      revoked = revocation(cert as PresentedCertificate, crlFileAt(allowed.crlFile).revoked());
    } catch (err) {
      revoked = `cannot read the CRL: ${err instanceof Error ? err.message : String(err)}`;
    }
    if (revoked !== undefined) return revoked;
  }
  const cns = allowed.allowedCns ?? [];
  if (cns.length > 0) {
    const cn = cert.subject?.CN;
    if (cn === undefined || !cns.includes(Array.isArray(cn) ? cn[0]! : cn)) return `CommonName authentication failed (CN ${JSON.stringify(cn ?? '')} not allowed)`;
  }
  const hosts = allowed.allowedHostnames ?? [];
  if (hosts.length > 0 && !hosts.some((h) => checkServerIdentity(h, cert) === undefined)) {
    return `client certificate authentication failed: not valid for any of ${hosts.join(', ')}`;
  }
  return undefined;
}
