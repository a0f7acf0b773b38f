/**
 * Connection-level hostile input: HTTP/2 connections carrying several streams (a Watch or keep-alive stream
 * fed bad messages, reset mid-call, rapid resets, CONTINUATION floods, bad SETTINGS and WINDOW_UPDATE
 * values, PING floods, frames on stream 0 or even stream ids, GOAWAY) and HTTP/1.1 requests pipelined on one
 * connection. The message makers come from cases.ts.
 */
import type { Prng } from '../../src/base/prng.js';
import { mutate, pick, randomBytes } from './mutate.js';
import { grpcHeaders, grpcMessage, h2Flag, h2Frame, h2Preface, h2Type, hpackBlock } from './wire.js';

/** A gRPC path and a valid request message for it. */
export type ValidCall = (rng: Prng) => [string, Buffer];

function settingsPayload(pairs: Array<[number, number]>): Buffer {
  const out = Buffer.alloc(6 * pairs.length);
  pairs.forEach(([id, value], i) => {
    out.writeUInt16BE(id, 6 * i);
    out.writeUInt32BE(value >>> 0, 6 * i + 2);
  });
  return out;
}

function u32(n: number): Buffer {
  const b = Buffer.alloc(4);
  b.writeUInt32BE(n >>> 0);
  return b;
}

/** One hostile frame sequence on stream `id` (odd, client-initiated) or on the connection. */
function hostileFrames(rng: Prng, id: number, call: ValidCall): Buffer[] {
  const [path, message] = call(rng);
  const headers = h2Frame(h2Type.headers, h2Flag.endHeaders, id, hpackBlock(grpcHeaders(path)));
  switch (rng.int(11)) {
    case 0: // a stream fed a good message, then bad ones, left open
      return [headers, h2Frame(h2Type.data, 0, id, grpcMessage(message)), h2Frame(h2Type.data, 0, id, grpcMessage(mutate(rng, message))), h2Frame(h2Type.data, 0, id, randomBytes(rng, rng.int(30)))];
    case 1: // reset mid-call
      return [headers, h2Frame(h2Type.data, 0, id, grpcMessage(message)), h2Frame(h2Type.rstStream, 0, id, u32(pick(rng, [0, 2, 8, 0xffffffff])))];
    case 2: { // rapid reset
      const out: Buffer[] = [];
      for (let i = 0; i < 50; i++) {
        const sid = id + 2 * i;
        out.push(h2Frame(h2Type.headers, h2Flag.endHeaders, sid, hpackBlock(grpcHeaders(path))), h2Frame(h2Type.rstStream, 0, sid, u32(8)));
      }
      return out;
    }
    case 3: { // CONTINUATION flood without END_HEADERS
      const block = hpackBlock([...grpcHeaders(path), ['x-pad', 'p'.repeat(100)]]);
      const out = [h2Frame(h2Type.headers, 0, id, block.subarray(0, 10))];
      for (let i = 0; i < 200; i++) out.push(h2Frame(h2Type.continuation, 0, id, hpackBlock([['x-more', 'm'.repeat(50)]])));
      return out;
    }
    case 4: // bad SETTINGS values
      return [h2Frame(h2Type.settings, 0, 0, settingsPayload([[pick(rng, [1, 2, 3, 4, 5, 6, 0x99]), pick(rng, [0, 1, 0x7fffffff, 0x80000000, 0xffffffff, 16_777_216])]]))];
    case 5: // WINDOW_UPDATE of 0 or past 2^31-1
      return [headers, h2Frame(h2Type.windowUpdate, 0, pick(rng, [0, id]), u32(pick(rng, [0, 0x7fffffff, 0xffffffff])))];
    case 6: // PING flood
      return Array.from({ length: 200 }, () => h2Frame(h2Type.ping, 0, 0, randomBytes(rng, 8)));
    case 7: // frames where they must not be: data on stream 0, headers on an even id, a too-short PING
      return [pick(rng, [h2Frame(h2Type.data, 0, 0, randomBytes(rng, 5)), h2Frame(h2Type.headers, h2Flag.endHeaders, id + 1, hpackBlock(grpcHeaders(path))), h2Frame(h2Type.ping, 0, 0, randomBytes(rng, 3))])];
    case 8: // a message split over frames, the stream ended halfway
      return [headers, h2Frame(h2Type.data, 0, id, grpcMessage(message).subarray(0, 3)), h2Frame(h2Type.data, h2Flag.endStream, id, Buffer.alloc(0))];
    case 9: // GOAWAY, then more streams
      return [h2Frame(h2Type.goaway, 0, 0, Buffer.concat([u32(id), u32(pick(rng, [0, 2, 11]))])), headers, h2Frame(h2Type.data, h2Flag.endStream, id, grpcMessage(message))];
    default: // a good call
      return [headers, h2Frame(h2Type.data, h2Flag.endStream, id, grpcMessage(message))];
  }
}

/** One HTTP/2 connection of 1 to 4 hostile frame sequences. */
export function h2ConnectionCase(rng: Prng, call: ValidCall): [Buffer, string] {
  const parts: Buffer[] = [h2Preface, h2Frame(h2Type.settings, 0, 0, Buffer.alloc(0)), h2Frame(h2Type.settings, h2Flag.ack, 0, Buffer.alloc(0))];
  const n = 1 + rng.int(4);
  for (let i = 0; i < n; i++) parts.push(...hostileFrames(rng, 1 + 200 * i, call));
  return [Buffer.concat(parts), `HTTP/2 connection, ${n} hostile sequences`];
}

/** 2 to 4 HTTP/1.1 requests back to back on one connection. */
export function http1PipelineCase(rng: Prng, one: (rng: Prng) => Buffer): [Buffer, string] {
  const n = 2 + rng.int(3);
  return [Buffer.concat(Array.from({ length: n }, () => one(rng))), `${n} pipelined HTTP/1.1 requests`];
}
