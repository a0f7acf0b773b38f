/**
 * A userspace TCP proxy in front of one member's peer port. Members advertise the proxy's port as their
 * peer URL, so every connection INTO that member passes here. The proxy reads the first frame of each
 * direction (the peer handshake: the server's Hello carries its member id, the client's Auth carries the
 * dialer's), so it knows each connection's link (from → to) and applies the current fault rule to it:
 * - pass;
 * - blackhole: bytes are swallowed and the connection stays open (as a silent network drop); when the link
 *   heals, the connection is reset, because its byte stream has a hole;
 * - delay: each chunk waits mean ± jitter ms, order kept;
 * - loss: each chunk, with probability p, resets the connection (the member reconnects).
 */
import { createServer, connect, type Server, type Socket } from 'node:net';
import { Packr } from 'msgpackr';
import type { Prng } from '../../src/base/index.js';

export type LinkMode =
  | { kind: 'pass' }
  | { kind: 'blackhole' }
  | { kind: 'delay'; meanMs: number; jitterMs: number }
  | { kind: 'loss'; p: number };

/** Member ids in decimal; undefined until the handshake told. */
export type LinkRule = (from: string | undefined, to: string | undefined) => LinkMode;

const packr = new Packr({ useRecords: false, int64AsType: 'bigint' });

/** The id field of a handshake frame (Hello: id, Auth: from), if `buf` holds one whole frame. */
function sniffId(buf: Buffer, field: 'id' | 'from'): string | undefined | 'partial' {
  if (buf.length < 5) return 'partial';
  const length = buf.readUInt32BE(0);
  if (buf.length < 4 + length) return 'partial';
  try {
    const body = packr.unpack(buf.subarray(5, 4 + length)) as Record<string, unknown>;
    const v = body[field];
    return typeof v === 'bigint' || typeof v === 'number' ? String(v) : undefined;
  } catch {
    return undefined;
  }
}

interface Link {
  client: Socket;
  server: Socket;
  from?: string;
  to?: string;
  stalled: boolean;
  lastDeliver: [number, number];
}

export class PeerProxy {
  readonly name: string;
  #server: Server | undefined;
  #links = new Set<Link>();
  #rule: () => LinkRule;
  #rng: Prng;
  #targetPort: number;
  stats = { connections: 0, resets: 0, swallowedBytes: 0 };

  constructor(o: { name: string; targetPort: number; rule: () => LinkRule; rng: Prng }) {
    this.name = o.name;
    this.#targetPort = o.targetPort;
    this.#rule = o.rule;
    this.#rng = o.rng;
  }

  async listen(port: number): Promise<void> {
    const server = createServer((client) => this.#accept(client));
    this.#server = server;
    await new Promise<void>((res, rej) => {
      server.once('error', rej);
      server.listen(port, '127.0.0.1', () => res());
    });
  }

  /** Re-evaluate every link against the rule: reset links that were stalled and are no longer blackholed. */
  refresh(): void {
    for (const l of this.#links) {
      const m = this.#rule()(l.from, l.to);
      if (l.stalled && m.kind !== 'blackhole') this.#reset(l);
      else if (m.kind === 'blackhole') l.stalled = true;
    }
  }

  async close(): Promise<void> {
    for (const l of this.#links) this.#reset(l);
    await new Promise<void>((res) => (this.#server ? this.#server.close(() => res()) : res()));
  }

  #accept(client: Socket): void {
    this.stats.connections++;
    const server = connect(this.#targetPort, '127.0.0.1');
    const link: Link = { client, server, stalled: false, lastDeliver: [0, 0] };
    this.#links.add(link);
    const drop = (): void => this.#reset(link, false);
    client.on('error', drop).on('close', drop);
    server.on('error', drop).on('close', drop);
    this.#pipe(link, client, server, 0, 'from');
    this.#pipe(link, server, client, 1, 'id');
  }

  #pipe(link: Link, src: Socket, dst: Socket, dir: 0 | 1, field: 'from' | 'id'): void {
    let head: Buffer | undefined = Buffer.alloc(0);
    src.on('data', (chunk: Buffer) => {
      if (head !== undefined) {
        head = Buffer.concat([head, chunk]);
        const id = sniffId(head, field);
        if (id !== 'partial' || head.length > 4096) {
          if (id !== 'partial') {
            if (dir === 0) link.from = id;
            else link.to = id;
          }
          head = undefined;
        }
      }
      this.#forward(link, dst, chunk, dir);
    });
  }

  #forward(link: Link, dst: Socket, chunk: Buffer, dir: 0 | 1): void {
    const mode = this.#rule()(link.from, link.to);
    if (link.stalled || mode.kind === 'blackhole') {
      link.stalled = true;
      this.stats.swallowedBytes += chunk.length;
      return;
    }
    if (mode.kind === 'loss' && this.#rng.next() < mode.p) return this.#reset(link);
    if (mode.kind !== 'delay') {
      if (!dst.destroyed) dst.write(chunk);
      return;
    }
    const now = Date.now();
    const delayMs = Math.max(0, mode.meanMs + (this.#rng.next() * 2 - 1) * mode.jitterMs);
    const at = Math.max(link.lastDeliver[dir], now + delayMs);
    link.lastDeliver[dir] = at;
    setTimeout(() => {
      if (!dst.destroyed) dst.write(chunk);
    }, at - now);
  }

  #reset(link: Link, count = true): void {
    if (!this.#links.delete(link)) return;
    if (count) this.stats.resets++;
    link.client.destroy();
    link.server.destroy();
  }
}
