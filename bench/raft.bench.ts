/**
 * The Raft core's hot path, with no I/O: an in-memory 3-node cluster whose "disk" is instant.
 *
 * 1. Entries committed per second: the leader proposes a batch of 100 entries of 128 bytes, the pump carries
 *    Readies and messages until every node applied the batch. Counts the whole protocol work (leader append,
 *    MsgApp fan-out, follower append, acks, commit, commit fan-out, apply hand-out).
 * 2. step() calls per second: a follower fed MsgApps of one entry each (with ready()/onPersisted every 64
 *    messages), i.e. the per-message cost on the receiving side.
 *
 * Expectation: ≥ 300,000 entries/s and ≥ 1,000,000 step()/s on one core. Per entry the cluster does a few
 * array pushes and object allocations (one Entry, shared by reference across nodes, and a slice per MsgApp);
 * per batch a handful of messages. etcd-io/raft's BenchmarkOneNode commits ~1–2 M entries/s in Go with a
 * similar in-memory setup, so a JS core within a small factor of it is the target.
 *
 * Run: npx tsx bench/raft.bench.ts
 */
import { Bench } from 'tinybench';
import { Prng } from '../src/base/prng.js';
import { EntryType, MessageType, RawNode, decodeConfChange } from '../src/raft/index.js';
import type { Entry, Message, RaftConfig } from '../src/raft/index.js';

const batchEntries = 100;
const entryBytes = 128;

function config(id: bigint, seed: number): RaftConfig {
  return {
    id,
    electionTicks: 10,
    heartbeatTicks: 1,
    preVote: true,
    checkQuorum: true,
    maxMsgBytes: 1024 * 1024,
    maxInflightMsgs: 256,
    maxUncommittedBytes: 1 << 30,
    rng: new Prng(seed),
  };
}

class MemCluster {
  readonly nodes = new Map<bigint, RawNode>();
  readonly applied = new Map<bigint, number>();
  queue: Message[] = [];
  steps = 0;

  constructor(ids: bigint[]) {
    for (const id of ids) {
      const node = new RawNode(config(id, Number(id)), {
        hardState: { term: 0, vote: 0n, commit: 0 },
        snapshot: { index: 0, term: 0, confState: { voters: [], learners: [] } },
        entries: [],
        initialConfState: { voters: ids, learners: [] },
        applied: 0,
      });
      this.nodes.set(id, node);
      this.applied.set(id, 0);
    }
  }

  #apply(id: bigint, node: RawNode, entries: Entry[]): void {
    for (const e of entries) if (e.type === EntryType.ConfChange) node.applyConfChange(decodeConfChange(e.data));
    const last = entries[entries.length - 1]!.index;
    node.onApplied(last);
    this.applied.set(id, last);
  }

  pump(): void {
    for (let round = 0; round < 10_000; round++) {
      let moved = false;
      for (const [id, node] of this.nodes) {
        while (node.hasReady()) {
          moved = true;
          const rd = node.ready();
          for (const m of rd.messages) this.queue.push(m);
          for (const m of rd.messagesAfterPersist) this.queue.push(m);
          node.onPersisted(rd.persistedUpTo);
          if (rd.committedEntries.length > 0) this.#apply(id, node, rd.committedEntries);
        }
      }
      const q = this.queue;
      this.queue = [];
      for (const m of q) {
        this.nodes.get(m.to)!.step(m);
        this.steps++;
      }
      if (!moved && q.length === 0) return;
    }
    throw new Error('cluster did not settle');
  }

  electFirst(): RawNode {
    const first = this.nodes.values().next().value!;
    this.pump();
    for (let i = 0; i < 100 && first.status().role !== 'leader'; i++) {
      first.tick();
      this.pump();
    }
    if (first.status().role !== 'leader') throw new Error('no leader');
    return first;
  }
}

function followerFeed(): () => void {
  const follower = new RawNode(config(2n, 2), {
    hardState: { term: 0, vote: 0n, commit: 0 },
    snapshot: { index: 0, term: 0, confState: { voters: [], learners: [] } },
    entries: [],
    initialConfState: { voters: [1n, 2n, 3n], learners: [] },
    applied: 0,
  });
  const rd = follower.ready();
  follower.onPersisted(rd.persistedUpTo);
  let index = 3;
  const data = new Uint8Array(entryBytes);
  return () => {
    for (let i = 0; i < 64; i++) {
      const m: Message = {
        type: MessageType.App,
        from: 1n,
        to: 2n,
        term: 2,
        logTerm: index <= 3 ? 1 : 2,
        index,
        entries: [{ term: 2, index: index + 1, type: EntryType.Normal, data }],
        commit: index,
        reject: false,
        rejectHint: 0,
      };
      follower.step(m);
      index++;
    }
    const r = follower.ready();
    follower.onPersisted(r.persistedUpTo);
    if (r.committedEntries.length > 0) follower.onApplied(r.committedEntries[r.committedEntries.length - 1]!.index);
    // Keep the in-memory log bounded: release what is applied.
    const st = follower.status();
    if (st.applied > 10_000) {
      follower.compact({ meta: { index: st.applied, term: 2, confState: st.confState }, data: new Uint8Array(0) }, 0);
    }
  };
}

async function main(): Promise<void> {
  const cluster = new MemCluster([1n, 2n, 3n]);
  const leader = cluster.electFirst();
  const data = new Uint8Array(entryBytes);
  let committedTotal = 0;
  let rounds = 0;
  const commitBatch = (): void => {
    for (let i = 0; i < batchEntries; i++) {
      const r = leader.propose(data);
      if (!r.ok) throw new Error(`proposal refused: ${r.error}`);
    }
    cluster.pump();
    const st = leader.status();
    for (const [, a] of cluster.applied) if (a !== st.commit) throw new Error('a node did not apply the batch');
    committedTotal += batchEntries;
    if (++rounds % 100 === 0) {
      // Keep memory flat: each node snapshots (empty state) and releases its applied log.
      for (const n of cluster.nodes.values()) {
        const s = n.status();
        n.compact({ meta: { index: s.applied, term: st.term, confState: s.confState }, data: new Uint8Array(0) }, 0);
      }
    }
  };
  const feed = followerFeed();

  const bench = new Bench({ time: 2000 });
  bench.add(`3-node cluster: commit a batch of ${batchEntries} × ${entryBytes} B entries`, commitBatch);
  bench.add('follower: 64 × step(MsgApp of 1 entry) + ready + onPersisted', feed);
  const stepsBefore = cluster.steps;
  await bench.run();
  console.table(bench.table());
  const [clusterTask, feedTask] = bench.tasks;
  const c = clusterTask!.result;
  const f = feedTask!.result;
  if (c.state === 'completed') {
    const batchesPerSecond = c.throughput.mean;
    console.log(`entries committed per second (3 nodes, in memory): ${Math.round(batchesPerSecond * batchEntries).toLocaleString('en-US')}`);
    console.log(`messages stepped per committed entry: ${((cluster.steps - stepsBefore) / committedTotal).toFixed(3)}`);
  }
  if (f.state === 'completed') {
    console.log(`step() calls per second (follower, MsgApp): ${Math.round(f.throughput.mean * 64).toLocaleString('en-US')}`);
  }
}

await main();
