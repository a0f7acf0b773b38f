/**
 * A socket speaking frames: reads are parsed into frames and handed to one handler at a time. Frames are
 * parsed only while a handler is set; bytes that arrive meanwhile wait unparsed in the reader. That lets a
 * handshake `await` one frame and then hand the stream to the next phase without losing a frame that came in
 * the same TCP read, and lets the next phase judge those bytes by its own limits.
 *
 * Until `authenticate()` (the token handshake succeeded, handshake.ts) a connection accepts frames of
 * peerHandshakeFrameBytesMax and holds peerHandshakeBufferedBytesMax unread; past either it is destroyed.
 * A stranger gets a few KiB and no decoding of anything larger. Afterwards frames may be peerFrameBytesMax,
 * and unread bytes past peerUnreadBytesMax pause the socket until a handler takes them (backpressure).
 */
import * as net from 'node:net';
import * as tls from 'node:tls';
import { readFileSync } from 'node:fs';
import { type Frame, FrameReader, FrameType, ProtocolError, encodeFrame, frameHeader } from './frame.js';
import type { PeerTlsOptions } from './types.js';
import { tlsPolicyOptions, type AllowedIdentities } from '../tls/tls-policy.js';
import { readRevokedSerials } from '../tls/crl.js';
import {
  peerFrameBytesMax,
  peerHandshakeBufferedBytesMax,
  peerHandshakeFrameBytesMax,
  peerRefusalFlushMs,
  peerUnreadBytesMax,
} from '../base/limits.js';

export type FrameHandler = (frame: Frame) => void;

export class FramedConnection {
  readonly socket: net.Socket;
  #reader = new FrameReader(peerHandshakeFrameBytesMax);
  #handler: FrameHandler | undefined;
  #authenticated = false;
  #draining = false;
  /** The socket is paused by us (unread bytes past the limit), not by a consumer such as a snapshot sink. */
  #pausedUnread = false;
  #closeListeners: ((err: Error | undefined) => void)[] = [];
  #closed = false;
  #closeError: Error | undefined;
  bytesRead = 0;
  bytesWritten = 0;

  constructor(socket: net.Socket) {
    this.socket = socket;
    this.remoteAddress = `${socket.remoteAddress ?? '?'}:${socket.remotePort ?? '?'}`;
    socket.setNoDelay(true);
    socket.setKeepAlive(true, 5_000);
    socket.on('data', (chunk: Buffer) => this.#onData(chunk));
    socket.on('error', (err) => this.destroy(err));
    socket.on('close', () => this.destroy());
    socket.on('end', () => socket.end());
  }

  get closed(): boolean {
    return this.#closed;
  }

  get authenticated(): boolean {
    return this.#authenticated;
  }

  /** Captured at construction: a destroyed socket forgets its address, and we log it after errors. */
  readonly remoteAddress: string;

  /** The handshake succeeded: frames up to peerFrameBytesMax from now on. */
  authenticate(): void {
    this.#authenticated = true;
    this.#reader.maxBytes = peerFrameBytesMax;
  }

  /** Sets the handler for following frames and delivers any that were waiting. */
  setHandler(handler: FrameHandler | undefined): void {
    this.#handler = handler;
    if (handler === undefined || this.#draining) return; // a drain in progress picks the new handler up
    if (this.#pausedUnread) {
      this.#pausedUnread = false;
      this.socket.resume();
    }
    this.#drain();
  }

  /** The next frame, or a rejection on close/timeout. Leaves no handler set afterwards. */
  nextFrame(timeoutMs: number, what: string): Promise<Frame> {
    return new Promise<Frame>((resolve, reject) => {
      const timer = setTimeout(() => {
        this.#handler = undefined;
        reject(new Error(`timed out after ${timeoutMs} ms waiting for ${what}`));
      }, timeoutMs);
      const onClose = (err: Error | undefined): void => {
        clearTimeout(timer);
        reject(err ?? new Error(`connection closed while waiting for ${what}`));
      };
      if (this.#closed) return onClose(this.#closeError);
      this.#closeListeners.push(onClose);
      this.setHandler((frame) => {
        clearTimeout(timer);
        this.#closeListeners = this.#closeListeners.filter((l) => l !== onClose);
        this.#handler = undefined;
        resolve(frame);
      });
    });
  }

  onClose(listener: (err: Error | undefined) => void): void {
    if (this.#closed) listener(this.#closeError);
    else this.#closeListeners.push(listener);
  }

  /** Writes a msgpack frame; returns false when the socket buffer is above its high-water mark. */
  send(type: FrameType, value: unknown): boolean {
    return this.writeRaw(encodeFrame(type, value));
  }

  /** Writes a raw-payload frame (snapshot chunks) without copying the payload. */
  sendRaw(type: FrameType, payload: Uint8Array): boolean {
    this.writeRaw(frameHeader(type, payload.length));
    return this.writeRaw(payload);
  }

  writeRaw(bytes: Uint8Array): boolean {
    if (this.#closed) return false;
    this.bytesWritten += bytes.length;
    return this.socket.write(bytes);
  }

  /**
   * Sends a refusal and closes: nothing more is read (unread bytes are dropped), and the socket is destroyed
   * once the frame is flushed, or after peerRefusalFlushMs if the remote does not read it. A half-closed
   * connection must not hold memory or a socket for whoever keeps its own side open.
   */
  refuse(code: string, reason: string): void {
    if (this.#closed) return;
    const frame = encodeFrame(FrameType.Refused, { reason, code });
    this.#markClosed(undefined);
    this.socket.pause();
    const timer = setTimeout(() => this.socket.destroy(), peerRefusalFlushMs);
    timer.unref();
    this.socket.end(frame, () => {
      clearTimeout(timer);
      this.socket.destroy();
    });
  }

  destroy(err?: Error): void {
    if (this.#closed) return;
    this.#markClosed(err);
    this.socket.destroy();
  }

  #markClosed(err: Error | undefined): void {
    this.#closed = true;
    this.#closeError = err;
    this.#handler = undefined;
    this.#reader.clear();
    const listeners = this.#closeListeners;
    this.#closeListeners = [];
    for (const listener of listeners) listener(err);
  }

  #onData(chunk: Buffer): void {
    if (this.#closed) return;
    this.bytesRead += chunk.length;
    this.#reader.append(chunk);
    this.#drain();
  }

  /** Hands parsed frames to the handler while one is set; then enforces the unread limits. */
  #drain(): void {
    this.#draining = true;
    try {
      while (!this.#closed && this.#handler !== undefined) {
        let frame: Frame | undefined;
        try {
          frame = this.#reader.next();
        } catch (err) {
          return this.destroy(err as Error); // a bad header: the remote does not speak our protocol
        }
        if (frame === undefined) break;
        // A handler's own exception is not the remote's fault: it propagates (an invariant crashes).
        this.#handler(frame);
      }
    } finally {
      this.#draining = false;
    }
    if (this.#closed || this.#handler !== undefined) return;
    const unread = this.#reader.buffered;
    if (!this.#authenticated) {
      if (unread > peerHandshakeBufferedBytesMax) this.destroy(new ProtocolError(`${unread} bytes sent before the handshake completed`));
    } else if (unread > peerUnreadBytesMax && !this.#pausedUnread) {
      this.#pausedUnread = true;
      this.socket.pause();
    }
  }
}

export interface PeerAddress {
  host: string;
  port: number;
  secure: boolean;
}

/** Accepts `host:port`, `http://host:port`, `https://host:port` (IPv6 in brackets). */
export function parsePeerUrl(url: string): PeerAddress {
  const withScheme = /^[a-z][a-z0-9+.-]*:\/\//i.test(url) ? url : `http://${url}`;
  let parsed: URL;
  try {
    parsed = new URL(withScheme);
  } catch {
    throw new TypeError(`invalid peer URL ${JSON.stringify(url)}`);
  }
  if (parsed.protocol !== 'http:' && parsed.protocol !== 'https:') {
    throw new TypeError(`peer URL ${JSON.stringify(url)} must use http or https`);
  }
  if (parsed.port === '') throw new TypeError(`peer URL ${JSON.stringify(url)} has no port`);
  const host = parsed.hostname.replace(/^\[(.*)\]$/, '$1');
  return { host, port: Number(parsed.port), secure: parsed.protocol === 'https:' };
}

export interface TlsMaterial {
  cert: Buffer;
  key: Buffer;
  ca: Buffer | undefined;
  clientCertAuth: boolean;
  /** Cipher suites and versions, for both directions. */
  policy: tls.SecureContextOptions;
  /** Checks of an accepted peer's certificate (its CRL is read again per connection, as etcd does). */
  allowed: AllowedIdentities;
}

export function loadTls(options: PeerTlsOptions): TlsMaterial {
  // A CRL is applied after each handshake (acceptVerifiedClient, as etcd does); a bad file stops the start here.
  if (options.crlFile !== undefined) readRevokedSerials(options.crlFile);
  return {
    cert: readFileSync(options.certFile),
    key: readFileSync(options.keyFile),
    ca: options.trustedCaFile === undefined ? undefined : readFileSync(options.trustedCaFile),
    clientCertAuth: options.clientCertAuth === true,
    policy: tlsPolicyOptions(options.policy),
    allowed: {
      ...(options.crlFile !== undefined ? { crlFile: options.crlFile } : {}),
      ...(options.allowedCns !== undefined ? { allowedCns: options.allowedCns } : {}),
      ...(options.allowedHostnames !== undefined ? { allowedHostnames: options.allowedHostnames } : {}),
    },
  };
}

/** Opens a TCP (or TLS, when the URL is https or TLS material is configured) connection. */
export function dial(url: string, material: TlsMaterial | undefined, timeoutMs: number): Promise<FramedConnection> {
  const address = parsePeerUrl(url);
  return new Promise<FramedConnection>((resolve, reject) => {
    const useTls = address.secure || material !== undefined;
    const socket: net.Socket = useTls
      ? tls.connect({
          host: address.host,
          port: address.port,
          cert: material?.cert,
          key: material?.key,
          ca: material?.ca,
          rejectUnauthorized: material?.ca !== undefined,
          ...material?.policy,
          ...(net.isIP(address.host) === 0 ? { servername: address.host } : {}),
        })
      : net.connect({ host: address.host, port: address.port });
    const timer = setTimeout(() => socket.destroy(new Error(`connect to ${url} timed out after ${timeoutMs} ms`)), timeoutMs);
    const onError = (err: Error): void => {
      clearTimeout(timer);
      reject(err);
    };
    socket.once('error', onError);
    socket.once(useTls ? 'secureConnect' : 'connect', () => {
      clearTimeout(timer);
      socket.off('error', onError);
      resolve(new FramedConnection(socket));
    });
  });
}
