/**
 * etcd's client ping floor (--grpc-keepalive-min-time; grpc-go's keepalive.EnforcementPolicy with MinTime set and
 * PermitWithoutStream false, as etcd configures it). grpc-go's rule, which we follow move for move:
 * - a ping that comes sooner than MinTime after the previous one, while the connection has a call open, is a
 *   strike; with no call open the floor is two hours (grpc-go's defaultPingTimeout: keepalive without streams is
 *   not permitted at all);
 * - the server sending headers or data resets the strikes (its answer may be what made the client ping, e.g.
 *   grpc-go's BDP estimator), and the ping after that reset is not judged;
 * - the third strike (more than maxPingStrikes = 2) is answered GOAWAY ENHANCE_YOUR_CALM with debug data
 *   "too_many_pings", and the connection is closed. grpc clients then double their keepalive interval.
 * The transport acknowledges every ping itself and tells the policy (`onPing`, `streamOpened` / `streamClosed`);
 * the policy decides, and calls the transport's `goAway` once when the client must go. Node's sessions are wired
 * by session-ping-policy.ts; our own HTTP/2 connection (src/api/h2frames) calls the methods directly. No
 * node:http2 here: a member on our own frames never loads it.
 */
/** grpc-go's maxPingStrikes: strikes tolerated before GOAWAY. */
const pingStrikesMax = 2;
/** grpc-go's defaultPingTimeout: the floor for pings while no call is open (PermitWithoutStream false). */
const idlePingFloorMs = 2 * 60 * 60 * 1000;
/** The GOAWAY's debug data, which grpc clients look for. */
export const tooManyPings = Buffer.from('too_many_pings');

export class PingPolicy {
  readonly #minTimeMs: number;
  readonly #goAway: () => void;
  #lastPingAt = -Infinity;
  #strikes = 0;
  #resetStrikes = false;
  #goneAway = false;
  /** Streams open on the connection (grpc-go's len(activeStreams)). */
  #openStreams = 0;

  /** `goAway` ends the connection with GOAWAY ENHANCE_YOUR_CALM "too_many_pings"; it is called at most once. */
  constructor(minTimeMs: number, goAway: () => void) {
    this.#minTimeMs = minTimeMs;
    this.#goAway = goAway;
  }

  /** The server sent headers or data on this connection: the next ping is not judged and the strikes clear. */
  sent(): void {
    this.#resetStrikes = true;
  }

  streamOpened(): void {
    this.#openStreams++;
  }

  streamClosed(): void {
    this.#openStreams--;
  }

  /** A ping (not an ack) came from the client at `now` (ms, monotonic). */
  onPing(now: number): void {
    const last = this.#lastPingAt;
    this.#lastPingAt = now;
    if (this.#resetStrikes) {
      this.#resetStrikes = false;
      this.#strikes = 0;
      return;
    }
    const floorMs = this.#openStreams > 0 ? this.#minTimeMs : idlePingFloorMs;
    if (now - last < floorMs) this.#strikes++;
    if (this.#strikes > pingStrikesMax && !this.#goneAway) {
      this.#goneAway = true;
      this.#goAway();
    }
  }
}
