/**
 * Reading a unary gateway request's body. Untrusted bytes arrive here: a body may be cut short (the client
 * disconnects mid-body, or half-closes it), its chunked framing may be broken (Node's parser then destroys
 * the request with an error), or it may never end. Every such outcome settles the promise exactly once, as
 * a rejection the caller answers or drops: an unsettled or unhandled one would leak or stop the process.
 */
import type * as http from 'node:http';
import { gatewayJsonBytesMax } from '../../base/limits.js';
import { JsonRequestError } from './json-codec.js';
import { JsonObjectSplitter, parseJson } from './json-stream.js';

/**
 * The body did not arrive whole: the connection is gone or its framing broke. There is nobody left to
 * answer (Node's HTTP server already answered a framing error with 400 and closed), so the request ends.
 */
export class BodyCutError extends Error {
  override name = 'BodyCutError';
}

/** The whole body of a unary request, bounded; an empty body is `{}` (grpc-gateway tolerates EOF). */
export function readBody(req: http.IncomingMessage): Promise<unknown> {
  return new Promise((resolve, reject) => {
    const parts: Buffer[] = [];
    let bytes = 0;
    let settled = false;
    const settle = (fn: () => void): void => {
      if (settled) return;
      settled = true;
      req.off('data', onData);
      fn();
    };
    const onData = (chunk: Buffer): void => {
      bytes += chunk.length;
      if (bytes > gatewayJsonBytesMax) {
        req.pause();
        settle(() => reject(new JsonRequestError('etcdserver: request is too large')));
        return;
      }
      parts.push(chunk);
    };
    req.on('data', onData);
    req.on('end', () => settle(() => {
      const body = Buffer.concat(parts);
      if (body.toString('utf8').trim() === '') return resolve({});
      try {
        resolve(firstObject(body));
      } catch (err) {
        reject(err);
      }
    }));
    // Node reports a cut body as 'error' (ECONNRESET "aborted") and then 'close'; either one suffices.
    req.on('error', (err) => settle(() => reject(new BodyCutError(err.message))));
    req.on('close', () => settle(() => reject(new BodyCutError('request closed before its body ended'))));
  });
}

/** json.Decoder reads the first value and ignores the rest of the body. */
function firstObject(body: Buffer): unknown {
  const objects = new JsonObjectSplitter().push(body);
  return objects.length > 0 ? objects[0] : parseJson(body);
}
