/**
 * Splits a request body into its top-level JSON objects, as the gateway's json.Decoder reads a stream of
 * WatchRequest / LeaseKeepAliveRequest messages (`{...} {...}`, any whitespace between). Bytes are scanned once:
 * the splitter only tracks string/escape state and brace depth.
 */
import { gatewayJsonBytesMax, gatewayJsonNestingMax } from '../../base/limits.js';
import { JsonRequestError } from './json-codec.js';
import { exactNumbers } from './json-numbers.js';

export class JsonObjectSplitter {
  #parts: Buffer[] = [];
  #bytes = 0;
  #depth = 0;
  #inString = false;
  #escape = false;

  /** Returns the objects completed by `chunk`, parsed. Throws JsonRequestError on bad or oversized input. */
  push(chunk: Buffer): unknown[] {
    const out: unknown[] = [];
    let start = 0;
    for (let i = 0; i < chunk.length; i++) {
      const c = chunk[i]!;
      if (this.#depth === 0) {
        if (c === 0x20 || c === 0x0a || c === 0x0d || c === 0x09) {
          start = i + 1;
          continue;
        }
        if (c !== 0x7b) throw new JsonRequestError(`invalid character '${String.fromCharCode(c)}' looking for beginning of value`);
      }
      if (this.#inString) {
        if (this.#escape) this.#escape = false;
        else if (c === 0x5c) this.#escape = true;
        else if (c === 0x22) this.#inString = false;
        continue;
      }
      if (c === 0x22) this.#inString = true;
      else if (c === 0x7b || c === 0x5b) {
        if (++this.#depth > gatewayJsonNestingMax) throw new JsonRequestError(`invalid character '${String.fromCharCode(c)}' exceeded max depth`);
      }
      else if (c === 0x7d || c === 0x5d) {
        this.#depth--;
        if (this.#depth === 0) {
          this.#add(chunk.subarray(start, i + 1));
          out.push(parseJson(Buffer.concat(this.#parts)));
          this.#parts = [];
          this.#bytes = 0;
          start = i + 1;
        }
      }
    }
    if (this.#depth > 0) this.#add(chunk.subarray(start));
    return out;
  }

  #add(part: Buffer): void {
    this.#bytes += part.length;
    if (this.#bytes > gatewayJsonBytesMax) throw new JsonRequestError('etcdserver: request is too large');
    this.#parts.push(part);
  }
}

export function parseJson(text: Buffer): unknown {
  try {
    return JSON.parse(exactNumbers(text.toString('utf8')));
  } catch (err) {
    throw new JsonRequestError((err as Error).message);
  }
}
