/**
 * The replicated state machine the simulator runs on every node: a tiny KV store fed by puts that carry a
 * unique proposal id ("p:<id>", written to key k<id mod 16>). Clients retry a proposal until they see it
 * applied, so the same id may be committed twice; only the first application takes effect (dedupe by id),
 * as a server's request-id registry would do.
 *
 * Each state carries a hash chained over every applied entry (index, term, data): two nodes at the same
 * applied index with different hashes applied different sequences, which is a state-machine safety violation.
 */
import { fromUtf8, utf8 } from '../../src/base/bytes.js';
import type { Entry } from '../../src/raft/types.js';

export function encodeProposal(id: number): Uint8Array {
  return utf8(`p:${id}`);
}

export function decodeProposal(data: Uint8Array): number | undefined {
  if (data.length < 3 || data[0] !== 0x70 || data[1] !== 0x3a) return undefined;
  const id = Number(fromUtf8(data.subarray(2)));
  return Number.isSafeInteger(id) ? id : undefined;
}

export function chainHash(prev: number, e: Entry): number {
  let h = (prev ^ 0x811c9dc5) >>> 0;
  h = Math.imul(h ^ e.index, 0x01000193) >>> 0;
  h = Math.imul(h ^ e.term, 0x01000193) >>> 0;
  h = Math.imul(h ^ e.type, 0x01000193) >>> 0;
  for (let i = 0; i < e.data.length; i++) h = Math.imul(h ^ e.data[i]!, 0x01000193) >>> 0;
  return h;
}

interface SnapshotBody {
  index: number;
  hash: number;
  kv: [string, number][];
  ids: number[];
}

export class KvStateMachine {
  appliedIndex = 0;
  hash = 0;
  readonly kv = new Map<string, number>();
  readonly ids = new Set<number>();

  /** Apply one committed entry (conf changes and no-ops only advance the index and the hash). */
  apply(e: Entry, isProposal: boolean): void {
    this.appliedIndex = e.index;
    this.hash = chainHash(this.hash, e);
    if (!isProposal) return;
    const id = decodeProposal(e.data);
    if (id === undefined || this.ids.has(id)) return;
    this.ids.add(id);
    this.kv.set(`k${id % 16}`, id);
  }

  snapshot(): Uint8Array {
    const body: SnapshotBody = { index: this.appliedIndex, hash: this.hash, kv: [...this.kv], ids: [...this.ids] };
    return utf8(JSON.stringify(body));
  }

  static fromSnapshot(data: Uint8Array): KvStateMachine {
    const sm = new KvStateMachine();
    if (data.length === 0) return sm;
    const body = JSON.parse(fromUtf8(data)) as SnapshotBody;
    sm.appliedIndex = body.index;
    sm.hash = body.hash;
    for (const [k, v] of body.kv) sm.kv.set(k, v);
    for (const id of body.ids) sm.ids.add(id);
    return sm;
  }
}
