/**
 * A client speaking raw HTTP/2 frames to our server, for the frame-level suites (h2-connection, h2-flood):
 * it sends the preface and its SETTINGS, records every frame the server sends, and waits for what a test expects.
 */
import * as net from 'node:net';
import { expect } from 'vitest';
import { clientPreface, flag, frame, frameType, settingsFrame } from '../../../src/api/h2frames/frame-format.js';
import { encodeIndexed, encodeLiteralNewName } from '../../../src/api/h2frames/hpack.js';

export interface Frame {
  type: number;
  flags: number;
  streamId: number;
  payload: Buffer;
}

/** A client speaking raw frames; it records every frame the server sends. */
export class RawClient {
  readonly frames: Frame[] = [];
  readonly socket: net.Socket;
  closed = false;
  #buffer = Buffer.alloc(0);
  #waiters: (() => void)[] = [];

  constructor(port: number, settings: [number, number][] = []) {
    this.socket = net.connect(port, '127.0.0.1');
    this.socket.on('error', () => {});
    this.socket.on('data', (chunk: Buffer) => {
      this.#buffer = Buffer.concat([this.#buffer, chunk]);
      while (this.#buffer.length >= 9) {
        const length = this.#buffer.readUIntBE(0, 3);
        if (this.#buffer.length < 9 + length) break;
        this.frames.push({ type: this.#buffer[3]!, flags: this.#buffer[4]!, streamId: this.#buffer.readUInt32BE(5) & 0x7fffffff, payload: this.#buffer.subarray(9, 9 + length) });
        this.#buffer = this.#buffer.subarray(9 + length);
      }
      this.#wake();
    });
    this.socket.on('close', () => {
      this.closed = true;
      this.#wake();
    });
    this.socket.write(Buffer.concat([clientPreface, settingsFrame(settings)]));
  }

  send(...bytes: Buffer[]): void {
    this.socket.write(Buffer.concat(bytes));
  }

  /** Waits (up to 5 s) until `test` holds over the frames seen. */
  async until(test: (frames: Frame[]) => boolean): Promise<void> {
    const deadline = performance.now() + 5000;
    while (!test(this.frames)) {
      if (this.closed || performance.now() > deadline) throw new Error(`not seen; frames: ${JSON.stringify(this.frames.map((f) => [f.type, f.flags, f.streamId]))}`);
      await new Promise<void>((resolve) => {
        this.#waiters.push(resolve);
        setTimeout(resolve, 50);
      });
    }
  }

  async goAway(): Promise<number> {
    await this.until((fs) => fs.some((f) => f.type === frameType.goAway));
    return this.frames.find((f) => f.type === frameType.goAway)!.payload.readUInt32BE(4);
  }

  async closedSocket(): Promise<void> {
    const deadline = performance.now() + 5000;
    while (!this.closed && performance.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 20));
    expect(this.closed).toBe(true);
  }

  #wake(): void {
    for (const w of this.#waiters.splice(0)) w();
  }
}

/** A request's header block: literals without indexing, so it decodes the same on any connection. */
export function requestBlock(path: string, extra: [string, string][] = []): Buffer {
  return Buffer.concat([
    encodeIndexed(3), // :method POST
    encodeIndexed(6), // :scheme http
    encodeLiteralNewName(':path', path),
    encodeLiteralNewName(':authority', 'localhost'),
    encodeLiteralNewName('content-type', 'application/grpc'),
    encodeLiteralNewName('te', 'trailers'),
    ...extra.map(([n, v]) => encodeLiteralNewName(n, v)),
  ]);
}

export const headersOf = (streamId: number, block: Buffer, flags: number = flag.endHeaders): Buffer => frame(frameType.headers, flags, streamId, block);
export const dataOf = (streamId: number, bytes: Buffer, flags: number = flag.endStream): Buffer => frame(frameType.data, flags, streamId, bytes);
export const endedStream = (id: number) => (fs: Frame[]) => fs.some((f) => f.streamId === id && f.type === frameType.headers && (f.flags & flag.endStream) !== 0);
