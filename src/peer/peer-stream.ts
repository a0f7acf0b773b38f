/**
 * The outbound Raft stream to one peer: a bounded FIFO queue, flushed once per event-loop turn as batch
 * frames over one long-lived connection, reconnected with capped exponential backoff and jitter.
 *
 * Drops are deliberate: Raft retransmits, so a message that cannot leave soon is worth less than the memory
 * it holds. Whenever messages are dropped the owner hears `onUnreachable`, and Raft probes the peer again.
 *
 * States: connecting → open → (connection lost) → backoff → connecting …; closed is terminal.
 * Messages queue while connecting/open; in backoff they are dropped at once.
 */
import type { Message, NodeId } from '../raft/types.js';
import type { Logger } from '../config/log.js';
import { type FramedConnection, type TlsMaterial, dial } from './connection.js';
import { FrameType } from './frame.js';
import { type HandshakeIdentity, offerHandshake } from './handshake.js';
import { hex } from '../base/hex.js';
import { peerDownLogIntervalMs } from '../base/limits.js';
import type { PeerStats, PeerTransportLimits } from './types.js';
import { PeerAuthError, type PeerRefusal } from './types.js';

type StreamState = 'connecting' | 'open' | 'backoff' | 'closed';

export interface PeerStreamOptions {
  id: NodeId;
  urls: string[];
  identity: HandshakeIdentity;
  tls: TlsMaterial | undefined;
  limits: PeerTransportLimits;
  stats: PeerStats;
  logger: Logger;
  onUnreachable: (id: NodeId) => void;
  onRefused: (id: NodeId, refusal: PeerRefusal) => void;
}

/** Bytes a message will take on the wire, roughly: exact enough to size batches and bound the queue. */
export function estimateMessageBytes(msg: Message): number {
  let bytes = 96 + (msg.context?.length ?? 0);
  for (const entry of msg.entries) bytes += 24 + entry.data.length;
  if (msg.snapshot !== undefined) bytes += 64 + msg.snapshot.data.length;
  return bytes;
}

export class PeerStream {
  readonly id: NodeId;
  #urls: string[];
  #urlIndex = 0;
  #o: PeerStreamOptions;
  #state: StreamState = 'connecting';
  #conn: FramedConnection | undefined;
  #queue: Message[] = [];
  #queueHead = 0;
  #queuedBytes = 0;
  #flushScheduled = false;
  #waitingDrain = false;
  #attempt = 0;
  #timer: NodeJS.Timeout | undefined;
  #lastError = '';
  /** Since when (performance.now) the peer has been unreachable, and when that was last logged. */
  #downSinceMs = 0;
  #downLoggedMs = 0;

  constructor(options: PeerStreamOptions) {
    this.id = options.id;
    this.#urls = [...options.urls];
    this.#o = options;
    void this.#connect();
  }

  get urls(): readonly string[] {
    return this.#urls;
  }

  get state(): StreamState {
    return this.#state;
  }

  /** Enqueues messages (in order). Returns how many were dropped. */
  push(msgs: Message[]): number {
    if (this.#state === 'closed' || this.#state === 'backoff') return this.#drop(msgs.length);
    const { queueMessagesMax, queueBytesMax } = this.#o.limits;
    let dropped = 0;
    for (const msg of msgs) {
      const bytes = estimateMessageBytes(msg);
      if (this.#queue.length - this.#queueHead >= queueMessagesMax || this.#queuedBytes + bytes > queueBytesMax) {
        dropped += 1;
        continue;
      }
      this.#queue.push(msg);
      this.#queuedBytes += bytes;
    }
    if (dropped > 0) this.#drop(dropped);
    this.#scheduleFlush();
    return dropped;
  }

  updateUrls(urls: string[]): void {
    const changed = urls.length !== this.#urls.length || urls.some((u, i) => u !== this.#urls[i]);
    this.#urls = [...urls];
    this.#urlIndex = 0;
    // Reconnect to the new address at once; the current connection may point at a stale one.
    if (changed && this.#conn !== undefined) this.#conn.destroy(new Error('peer URLs updated'));
  }

  close(): void {
    if (this.#state === 'closed') return;
    this.#state = 'closed';
    clearTimeout(this.#timer);
    this.#clearQueue();
    this.#conn?.destroy();
    this.#conn = undefined;
    this.#o.stats.connected = false;
  }

  #drop(count: number): number {
    if (count === 0) return 0;
    this.#o.stats.sendFailures += count;
    this.#o.onUnreachable(this.id);
    return count;
  }

  #scheduleFlush(): void {
    if (this.#flushScheduled || this.#state !== 'open') return;
    this.#flushScheduled = true;
    // One flush per event-loop turn, after its I/O callbacks: everything Raft hands us while the turn lasts
    // shares a frame and a write. Each write to a peer wakes its process; flushed per job (a microtask),
    // a 3-member leader spent ~8 % of its time in those writes under a watch fan-out (issue 22).
    setImmediate(() => {
      this.#flushScheduled = false;
      this.#flush();
    });
  }

  #flush(): void {
    const conn = this.#conn;
    if (this.#state !== 'open' || conn === undefined || this.#waitingDrain) return;
    const { batchBytesMax, socketBufferedBytesMax } = this.#o.limits;
    while (this.#queueHead < this.#queue.length) {
      if (conn.socket.writableLength >= socketBufferedBytesMax) {
        // The kernel and the socket buffer are full: wait, and let the queue (bounded) absorb.
        this.#waitingDrain = true;
        conn.socket.once('drain', () => {
          this.#waitingDrain = false;
          this.#flush();
        });
        return;
      }
      const batch: Message[] = [];
      let batchBytes = 0;
      while (this.#queueHead < this.#queue.length && (batch.length === 0 || batchBytes < batchBytesMax)) {
        const msg = this.#queue[this.#queueHead] as Message;
        this.#queueHead += 1;
        const bytes = estimateMessageBytes(msg);
        batch.push(msg);
        batchBytes += bytes;
        this.#queuedBytes -= bytes;
      }
      const before = conn.bytesWritten;
      conn.send(FrameType.Messages, batch);
      this.#o.stats.framesSent += 1;
      this.#o.stats.messagesSent += batch.length;
      this.#o.stats.bytesSent += conn.bytesWritten - before;
    }
    this.#queue = [];
    this.#queueHead = 0;
    this.#queuedBytes = 0;
  }

  #clearQueue(): number {
    const count = this.#queue.length - this.#queueHead;
    this.#queue = [];
    this.#queueHead = 0;
    this.#queuedBytes = 0;
    return count;
  }

  async #connect(): Promise<void> {
    if (this.#state === 'closed') return;
    this.#state = 'connecting';
    const url = this.#urls[this.#urlIndex % Math.max(1, this.#urls.length)];
    const { handshakeTimeoutMs } = this.#o.limits;
    let conn: FramedConnection | undefined;
    try {
      if (url === undefined) throw new Error('peer has no URLs');
      conn = await dial(url, this.#o.tls, handshakeTimeoutMs);
      if (this.#state !== 'connecting') return conn.destroy();
      await offerHandshake(conn, this.#o.identity, 'raft', this.id, handshakeTimeoutMs);
    } catch (err) {
      conn?.destroy();
      return this.#onConnectionLost(err as Error, url);
    }
    if (this.#state !== 'connecting') return conn.destroy();
    this.#conn = conn;
    this.#state = 'open';
    this.#attempt = 0;
    this.#o.stats.connected = true;
    if (this.#lastError !== '') this.#o.logger.info('peer stream connected', { peer: hex(this.id), url });
    this.#lastError = '';
    conn.setHandler(() => conn.destroy(new Error('unexpected frame on an outbound raft stream')));
    conn.onClose((err) => {
      if (this.#conn !== conn) return;
      this.#conn = undefined;
      this.#onConnectionLost(err ?? new Error('connection closed by peer'), url);
    });
    this.#scheduleFlush();
  }

  #onConnectionLost(err: Error, url: string | undefined): void {
    if (this.#o.stats.connected) this.#o.stats.disconnects++;
    this.#o.stats.connected = false;
    this.#waitingDrain = false;
    if (this.#state === 'closed') return;
    const lost = this.#clearQueue();
    if (lost > 0) this.#drop(lost);
    if (err instanceof PeerAuthError) this.#o.onRefused(this.id, { code: err.code, reason: err.message });
    // Log once per distinct failure, not on every retry, so a dead peer does not flood the log.
    // A peer that stays down is logged again every peerDownLogIntervalMs, with how long it has been down
    // (issue 32, item 4: it was logged once, then never again).
    const message = err.message;
    const nowMs = performance.now();
    if (this.#lastError === '') this.#downSinceMs = nowMs;
    if (message !== this.#lastError) {
      const level = err instanceof PeerAuthError ? 'error' : 'warn';
      this.#o.logger[level]('peer stream failed', { peer: hex(this.id), url, error: message });
      this.#lastError = message;
      this.#downLoggedMs = nowMs;
    } else if (nowMs - this.#downLoggedMs >= peerDownLogIntervalMs) {
      this.#o.logger.warn('peer still unreachable', { peer: hex(this.id), url, error: message, downSeconds: Math.round((nowMs - this.#downSinceMs) / 1000) });
      this.#downLoggedMs = nowMs;
    }
    this.#state = 'backoff';
    this.#urlIndex += 1;
    const { reconnectDelayMsMin, reconnectDelayMsMax } = this.#o.limits;
    const ceiling = Math.min(reconnectDelayMsMax, reconnectDelayMsMin * 2 ** Math.min(this.#attempt, 20));
    this.#attempt += 1;
    // Jitter in [ceiling/2, ceiling): peers that lost the same node do not all redial in lockstep.
    const delayMs = ceiling / 2 + (Math.random() * ceiling) / 2;
    this.#timer = setTimeout(() => {
      this.#o.stats.reconnects += 1;
      void this.#connect();
    }, delayMs);
  }

  /**
   * The peer just connected to us, so it is up again: redial now instead of waiting out a backoff that grew
   * while it was down (a restarted follower would otherwise hear from its leader only seconds later).
   */
  redialNow(): void {
    if (this.#state !== 'backoff') return;
    clearTimeout(this.#timer);
    this.#attempt = 0;
    this.#o.stats.reconnects += 1;
    void this.#connect();
  }
}
