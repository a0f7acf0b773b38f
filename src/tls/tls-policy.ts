/**
 * The TLS settings shared by client and peer listeners (etcd --cipher-suites, --tls-min-version,
 * --tls-max-version, and the CRL files), as Node TLS options, plus etcd's log line for a refused handshake.
 */
import { readFileSync } from 'node:fs';
import type { Socket } from 'node:net';
import { checkServerIdentity, type SecureContextOptions, type TLSSocket } from 'node:tls';
import type { Logger } from '../config/log.js';
import type { TlsPolicy } from '../config/member-options.js';

export function tlsPolicyOptions(policy: TlsPolicy | undefined, crlFile: string | undefined): SecureContextOptions {
  return {
    ...(policy?.ciphers !== undefined ? { ciphers: policy.ciphers } : {}),
    ...(policy !== undefined ? { minVersion: policy.minVersion } : {}),
    ...(policy?.maxVersion !== undefined ? { maxVersion: policy.maxVersion } : {}),
    ...(crlFile !== undefined ? { crl: readCrl(crlFile) } : {}),
  };
}

/**
 * A CRL file in PEM or DER, as Go's x509.ParseCRL takes either (etcd's own fixture, integration/fixtures/
 * revoke.crl, is DER); OpenSSL's context takes only PEM, so DER is wrapped as PEM ("Failed to parse CRL" before).
 */
export function readCrl(file: string): Buffer {
  const bytes = readFileSync(file);
  if (bytes.subarray(0, 64).toString('latin1').includes('-----BEGIN')) return bytes;
  const lines = bytes.toString('base64').match(/.{1,64}/g) ?? [];
  return Buffer.from(`-----BEGIN X509 CRL-----\n${lines.join('\n')}\n-----END X509 CRL-----\n`, 'latin1');
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
}

function refusal(socket: TLSSocket, allowed: AllowedIdentities): string | undefined {
  if (!socket.authorized) {
    const error = socket.authorizationError;
    return error === undefined ? 'client certificate required' : `client certificate not accepted: ${String(error)}`;
  }
  const cert = socket.getPeerCertificate();
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
