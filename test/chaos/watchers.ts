/**
 * Watchers recorded into the history:
 * - the reference watcher: every key from revision 1, prev_kv, progress notifications; it gives the final
 *   history its complete coverage;
 * - reflectors, as kube-apiserver's: a paginated list at R, then a prefix watch from R+1 with prev_kv and
 *   progress notifications; a broken stream resumes after the last delivered revision on another member, a
 *   compacted one lists again.
 * Both send RequestProgress periodically and can be asked to catch up to a revision at the end of a run.
 */
import type { Etcd3, IWatchResponse } from 'etcd3';
import { prefixEnd, type Recorder, type WatchSession } from './history.js';
import { fullRange, lastObserved } from './reference-log.js';
import type { KvClient } from './workload.js';
import { bytes, toEvent } from './wire.js';

interface Stream {
  write(req: unknown): void;
  on(event: string, fn: (arg: never) => void): void;
  end(): void;
  cancel?(): void;
}

export interface WatchRunnerOptions {
  rec: Recorder;
  client: number;
  /** Running members' clients; the runner moves to the next one when a stream breaks. */
  members: () => { name: string; etcd: Etcd3 }[];
  prefix?: string;
  /** For a reflector: lists with this client before watching. */
  lister?: KvClient;
  log: (l: string) => void;
}

export class WatchRunner {
  session: WatchSession | undefined;
  #o: WatchRunnerOptions;
  #stream: Stream | undefined;
  #stopped = false;
  #opening = false;
  #attempt = 0;
  sessions = 0;

  constructor(o: WatchRunnerOptions) {
    this.#o = o;
  }

  get range(): { key: string; rangeEnd: string } {
    return this.#o.prefix === undefined ? fullRange : { key: this.#o.prefix, rangeEnd: prefixEnd(this.#o.prefix) };
  }

  async start(): Promise<void> {
    await this.#open(undefined);
  }

  /** Open a session: resuming `prev`, or (no prev) from revision 1 / a fresh list. */
  async #open(prev: WatchSession | undefined): Promise<void> {
    if (this.#opening) return;
    this.#opening = true;
    try {
      await this.#openLoop(prev);
    } finally {
      this.#opening = false;
    }
  }

  async #openLoop(prev: WatchSession | undefined): Promise<void> {
    while (!this.#stopped) {
      const members = this.#o.members();
      const m = members[this.#attempt++ % Math.max(1, members.length)];
      if (m === undefined) {
        await sleep(200); // every member is down (C2-kill-all): wait for one to come back
        continue;
      }
      let listOp: number | undefined;
      let startRev = prev ? lastObserved(prev) + 1 : 1;
      if (prev === undefined && this.#o.lister) {
        const lister = this.#o.lister;
        const op = await lister.list(this.#o.prefix!, 7);
        if (op.output?.type !== 'list') {
          await sleep(200);
          continue;
        }
        listOp = op.id;
        startRev = op.output.rev + 1;
      }
      try {
        await this.#watch(m, startRev, prev, listOp);
        return;
      } catch (e) {
        this.#o.log(`watch ${this.#o.client} on ${m.name}: ${String(e)}`);
        await sleep(200);
      }
    }
  }

  async #watch(m: { name: string; etcd: Etcd3 }, startRev: number, prev: WatchSession | undefined, listOp: number | undefined): Promise<void> {
    const stream = (await m.etcd.watchClient.watch()) as unknown as Stream;
    const { key, rangeEnd } = this.range;
    const session = this.#o.rec.openWatch({ client: this.#o.client, member: m.name, key, rangeEnd, startRev, prevKv: true, listOp, resumes: prev?.id });
    this.session = session;
    this.#stream = stream;
    this.sessions++;
    const broken = (why: 'error' | 'closed') => {
      if (this.session !== session || session.end !== undefined) return;
      session.end = why;
      if (!this.#stopped) void sleep(200).then(() => this.#open(session));
    };
    stream.on('data', (r: IWatchResponse) => this.#onResponse(session, r));
    stream.on('error', () => broken('error'));
    stream.on('end', () => broken('closed'));
    stream.write({ create_request: { key: bytes(key), range_end: bytes(rangeEnd), start_revision: String(startRev), prev_kv: true, progress_notify: true } });
  }

  #onResponse(session: WatchSession, r: IWatchResponse): void {
    if (this.session !== session) return;
    const headerRev = Number(r.header.revision);
    if (r.canceled) {
      session.end = 'canceled';
      if (Number(r.compact_revision) > 0) session.compactRev = Number(r.compact_revision);
      this.#o.log(`watch ${this.#o.client} session ${session.id} canceled: ${r.cancel_reason}`);
      this.#stream?.end();
      // A compacted reflector lists again; the reference watcher cannot recover its coverage.
      if (!this.#stopped && this.#o.lister) void sleep(100).then(() => this.#open(undefined));
      return;
    }
    if (r.created) return;
    const events = r.events.map(toEvent);
    session.responses.push({ at: this.#o.rec.now(), atMs: Date.now(), headerRev, events, progress: events.length === 0, fragment: r.fragment });
  }

  requestProgress(): void {
    try {
      this.#stream?.write({ progress_request: {} });
    } catch {
      // a broken stream is reopened by its error handler
    }
  }

  /** Force a new session on another member (e.g. the current one sits on a member that is gone). */
  restart(): void {
    const s = this.session;
    if (s === undefined) return;
    if (s.end === undefined) {
      s.end = 'closed';
      this.#stream?.cancel?.();
    }
    void this.#open(s);
  }

  delivered(): number {
    return this.session ? lastObserved(this.session) : 0;
  }

  stop(): void {
    this.#stopped = true;
    if (this.session && this.session.end === undefined) this.session.end = 'closed';
    try {
      this.#stream?.cancel?.();
      this.#stream?.end();
    } catch {
      // already closed
    }
  }
}

export function sleep(ms: number): Promise<void> {
  return new Promise((r) => setTimeout(r, ms));
}

/** Ask until every runner delivered through `rev`; a runner stuck for half the time moves to another member. */
export async function catchUp(runners: WatchRunner[], rev: number, timeoutMs: number): Promise<WatchRunner[]> {
  const start = Date.now();
  let moved = false;
  for (;;) {
    const behind = runners.filter((w) => w.delivered() < rev);
    if (behind.length === 0) return [];
    if (Date.now() - start > timeoutMs) return behind;
    if (!moved && Date.now() - start > timeoutMs / 2) {
      moved = true;
      for (const w of behind) w.restart();
    }
    for (const w of behind) w.requestProgress();
    await sleep(300);
  }
}
