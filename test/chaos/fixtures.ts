/** Tiny hand-written histories for the checkers' unit tests and the self-test. */
import type { History, Kv, Op, OpInput, OpOutput, WatchEvent, WatchSession } from './history.js';

export class HistoryBuilder {
  readonly h: History = { ops: [], watches: [] };

  /** An op on `client` spanning logical times [call, ret]; ret undefined with output 'fail' = unknown outcome. */
  op(client: number, call: number, ret: number | undefined, input: OpInput, output: OpOutput | 'fail'): Op {
    const op: Op = { id: this.h.ops.length, client, input, call };
    if (output === 'fail') op.output = { type: 'error', message: 'context deadline exceeded' };
    else {
      op.output = output;
      op.ret = ret;
    }
    this.h.ops.push(op);
    return op;
  }

  create(client: number, call: number, ret: number | undefined, key: string, value: string, rev: number | 'fail'): Op {
    return this.op(client, call, ret, { type: 'txn', key, cmpModRev: 0, action: 'put', value }, rev === 'fail' ? 'fail' : { type: 'txn', succeeded: true, rev });
  }

  update(client: number, call: number, ret: number | undefined, key: string, seen: number, value: string, rev: number | 'fail'): Op {
    return this.op(client, call, ret, { type: 'txn', key, cmpModRev: seen, action: 'put', value }, rev === 'fail' ? 'fail' : { type: 'txn', succeeded: true, rev });
  }

  get(client: number, call: number, ret: number, key: string, kv: Kv | null, rev: number): Op {
    return this.op(client, call, ret, { type: 'get', key }, { type: 'get', rev, kv });
  }

  watch(s: Partial<WatchSession> & { startRev: number }, responses: { headerRev: number; events?: WatchEvent[]; progress?: boolean; fragment?: boolean }[]): WatchSession {
    const session: WatchSession = {
      id: this.h.watches.length, client: 100, member: 'a', key: '\0', rangeEnd: '\0', prevKv: true, ...s,
      responses: responses.map((r, i) => ({ at: i, headerRev: r.headerRev, events: r.events ?? [], progress: r.progress ?? false, fragment: r.fragment ?? false })),
    };
    this.h.watches.push(session);
    return session;
  }
}

export function kv(key: string, value: string, modRev: number, createRev = modRev, version = 1): Kv {
  return { key, value, modRev, createRev, version, lease: '0' };
}

export function put(k: Kv, prevKv?: Kv): WatchEvent {
  return prevKv ? { type: 'put', kv: k, prevKv } : { type: 'put', kv: k };
}

export function del(key: string, rev: number, prevKv?: Kv): WatchEvent {
  const e: WatchEvent = { type: 'delete', kv: { key, value: '', modRev: rev, createRev: 0, version: 0, lease: '0' } };
  if (prevKv) e.prevKv = prevKv;
  return e;
}

export function deepCopy(h: History): History {
  return structuredClone(h);
}
