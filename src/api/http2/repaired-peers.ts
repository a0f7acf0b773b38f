/**
 * The verified client certificate of a connection that authority-fix.ts repairs. grpc-js reads a call's peer
 * certificate from its HTTP/2 session's socket (`getAuthContext`), and only when that socket is a TLSSocket;
 * a repaired connection reaches grpc-js as a Duplex (Node wraps it in a plain socket), so under
 * --client-cert-auth its certificate's common name, the user, was lost: a client sending a schemed
 * `:authority` over TLS was refused "user name is empty" where etcd takes the name.
 *
 * So the repair path tags each request it forwards with a header naming its connection by a random id, and
 * the gRPC layer finds the common name here by that id (api/grpc/call.ts). An id is 128 random bits, valid
 * while its TLS connection is open: a client cannot name another connection, and a request carrying the header
 * twice (a client that sent its own) is given no name.
 */
import { randomBytes } from 'node:crypto';
import type { Socket } from 'node:net';
import { TLSSocket } from 'node:tls';

/** The header a repaired request carries; lower case, as HTTP/2 requires. */
export const repairedConnectionHeader = 'etcetera-repaired-connection';

/** Common names of the open repaired TLS connections with a verified certificate, by connection id. */
const commonNames = new Map<string, string>();

/** grpc-js's rule: a certificate counts only on a verified (`authorized`) TLS connection. */
function verifiedCommonName(socket: Socket): string | undefined {
  if (!(socket instanceof TLSSocket) || !socket.authorized) return undefined;
  const cn: string | string[] | undefined = socket.getPeerCertificate().subject?.CN;
  return Array.isArray(cn) ? cn[0] : cn;
}

/**
 * Registers `socket` (about to be repaired) and returns the HPACK field to add to each of its requests, or
 * undefined when it has no verified certificate to carry. The entry goes when the socket closes.
 */
export function tagRepairedConnection(socket: Socket): Buffer | undefined {
  const cn = verifiedCommonName(socket);
  if (cn === undefined || cn === '') return undefined;
  const id = randomBytes(16).toString('hex');
  commonNames.set(id, cn);
  socket.once('close', () => commonNames.delete(id));
  return literalField(repairedConnectionHeader, id);
}

/** The common name for a call's `repairedConnectionHeader` values: exactly one, of an open connection. */
export function repairedCommonName(values: ReadonlyArray<string | Buffer>): string | undefined {
  if (values.length !== 1 || typeof values[0] !== 'string') return undefined;
  return commonNames.get(values[0]);
}

/**
 * RFC 7541 6.2.2, a literal header field without indexing and a new name, neither Huffman coded: it leaves
 * the dynamic table alone, so adding it keeps the encoder's and decoder's tables in step.
 */
function literalField(name: string, value: string): Buffer {
  const n = Buffer.from(name, 'latin1');
  const v = Buffer.from(value, 'latin1');
  if (n.length > 126 || v.length > 126) throw new RangeError('literalField: only short strings');
  return Buffer.concat([Buffer.from([0x00, n.length]), n, Buffer.from([v.length]), v]);
}
