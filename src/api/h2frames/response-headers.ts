/**
 * The header blocks a gRPC server sends, HPACK-encoded once (RFC 7541; no dynamic table, no Huffman, so the
 * encoder has no state and every block is a constant or a concatenation of literals):
 *   response headers  `:status 200` (static index 8), `content-type: application/grpc` (name index 31)
 *   OK trailers       `grpc-status: 0`
 * A status other than OK adds `grpc-message` (percent-encoded by the caller, call-headers.ts).
 */
import { encodeIndexed, encodeLiteralIndexedName, encodeLiteralNewName } from './hpack.js';

/** RFC 7541 Appendix A: `:status 200` and the name `content-type`, `:status`. */
const staticStatus200 = 8;
const staticStatusName = 8;
const staticContentTypeName = 31;

export const responseHeadersBlock = Buffer.concat([encodeIndexed(staticStatus200), encodeLiteralIndexedName(staticContentTypeName, 'application/grpc')]);

export const okTrailersBlock = encodeLiteralNewName('grpc-status', '0');

/** `grpc-status` and, when there is one, `grpc-message` (already percent-encoded). */
export function statusTrailersBlock(status: number, message: string): Buffer {
  if (status === 0 && message === '') return okTrailersBlock;
  const code = encodeLiteralNewName('grpc-status', String(status));
  return message === '' ? code : Buffer.concat([code, encodeLiteralNewName('grpc-message', message)]);
}

/** A trailers-only response (an immediate status): the response headers and the status in one block. */
export function trailersOnlyBlock(status: number, message: string): Buffer {
  return Buffer.concat([responseHeadersBlock, statusTrailersBlock(status, message)]);
}

/** A bare HTTP status (a request that is not gRPC: 415; a header list over our limit: 431). */
export function httpStatusBlock(status: number): Buffer {
  return encodeLiteralIndexedName(staticStatusName, String(status));
}
