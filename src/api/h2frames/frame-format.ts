/**
 * HTTP/2's frame layout (RFC 9113 §4.1, §6) as our own gRPC server writes and reads it: the 9-byte header
 * (24-bit length, type, flags, 31-bit stream id), the frame types, flags, error codes and settings it uses,
 * and builders for the control frames. Worked example: a PING ack of payload 0102030405060708 is
 *   00 00 08 | 06 | 01 | 00 00 00 00 | 01 02 03 04 05 06 07 08
 * (length 8, type PING, flag ACK, stream 0, the payload echoed).
 */

export const frameHeaderBytes = 9;

export const frameType = {
  data: 0x0,
  headers: 0x1,
  priority: 0x2,
  rstStream: 0x3,
  settings: 0x4,
  pushPromise: 0x5,
  ping: 0x6,
  goAway: 0x7,
  windowUpdate: 0x8,
  continuation: 0x9,
} as const;

export const flag = { endStream: 0x1, ack: 0x1, endHeaders: 0x4, padded: 0x8, priority: 0x20 } as const;

export const errorCode = {
  noError: 0x0,
  protocol: 0x1,
  internal: 0x2,
  flowControl: 0x3,
  streamClosed: 0x5,
  frameSize: 0x6,
  refusedStream: 0x7,
  cancel: 0x8,
  compression: 0x9,
  enhanceYourCalm: 0xb,
} as const;

export const settingId = {
  headerTableSize: 0x1,
  enablePush: 0x2,
  maxConcurrentStreams: 0x3,
  initialWindowSize: 0x4,
  maxFrameSize: 0x5,
  maxHeaderListSize: 0x6,
} as const;

/** The client connection preface (RFC 9113 §3.4). */
export const clientPreface = Buffer.from('PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n', 'latin1');

/** HTTP/2's defaults before SETTINGS say otherwise (§6.5.2). */
export const defaultWindowBytes = 65_535;
export const defaultFrameBytesMax = 16_384;
/** The largest window (§6.9.1) and the largest SETTINGS_MAX_FRAME_SIZE (§6.5.2). */
export const windowBytesLimit = 2 ** 31 - 1;
export const frameBytesLimit = 2 ** 24 - 1;

export function writeFrameHeader(out: Buffer, at: number, length: number, type: number, flags: number, streamId: number): void {
  out[at] = length >>> 16;
  out[at + 1] = (length >>> 8) & 0xff;
  out[at + 2] = length & 0xff;
  out[at + 3] = type;
  out[at + 4] = flags;
  out.writeUInt32BE(streamId, at + 5);
}

/** A whole frame in one new buffer. */
export function frame(type: number, flags: number, streamId: number, payload: Uint8Array): Buffer {
  const out = Buffer.allocUnsafe(frameHeaderBytes + payload.length);
  writeFrameHeader(out, 0, payload.length, type, flags, streamId);
  out.set(payload, frameHeaderBytes);
  return out;
}

/** SETTINGS with the given [id, value] pairs. */
export function settingsFrame(settings: readonly (readonly [number, number])[]): Buffer {
  const payload = Buffer.allocUnsafe(6 * settings.length);
  settings.forEach(([id, value], i) => {
    payload.writeUInt16BE(id, 6 * i);
    payload.writeUInt32BE(value, 6 * i + 2);
  });
  return frame(frameType.settings, 0, 0, payload);
}

export const settingsAck = frame(frameType.settings, flag.ack, 0, Buffer.alloc(0));

export function windowUpdateFrame(streamId: number, increment: number): Buffer {
  const out = Buffer.allocUnsafe(frameHeaderBytes + 4);
  writeFrameHeader(out, 0, 4, frameType.windowUpdate, 0, streamId);
  out.writeUInt32BE(increment, frameHeaderBytes);
  return out;
}

export function rstStreamFrame(streamId: number, code: number): Buffer {
  const out = Buffer.allocUnsafe(frameHeaderBytes + 4);
  writeFrameHeader(out, 0, 4, frameType.rstStream, 0, streamId);
  out.writeUInt32BE(code, frameHeaderBytes);
  return out;
}

export function goAwayFrame(lastStreamId: number, code: number, debug: Uint8Array = Buffer.alloc(0)): Buffer {
  const payload = Buffer.allocUnsafe(8 + debug.length);
  payload.writeUInt32BE(lastStreamId, 0);
  payload.writeUInt32BE(code, 4);
  payload.set(debug, 8);
  return frame(frameType.goAway, 0, 0, payload);
}

export function pingFrame(payload: Uint8Array, ack: boolean): Buffer {
  return frame(frameType.ping, ack ? flag.ack : 0, 0, payload);
}
