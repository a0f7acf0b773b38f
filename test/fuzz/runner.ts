/**
 * Runs hostile cases against one real member and checks after every batch that it is alive and serves: a put
 * and a read of it, and every few batches a read of every acknowledged write. A failure names the run seed,
 * each case seed of the failing batch (any one replays alone: `npm run fuzz -- --case <seed>`), its input,
 * and the member's last log lines (a crash prints its stack there).
 */
import type { Etcd3 } from 'etcd3';
import { Prng } from '../../src/base/prng.js';
import { clientOf, type ServerProcess } from '../e2e/harness.js';
import { sendRaw } from '../e2e/raw-socket.js';
import { fuzzCase, type FuzzCase } from './cases.js';

export interface FuzzOptions {
  /** The run's seed: it draws every case seed. */
  seed: number;
  /** Stop after this many cases, or when `deadlineMs` (Date.now()) passes, whichever first. */
  casesMax: number;
  deadlineMs: number;
  /** Cases in flight at once; the member is checked after each batch. */
  batch?: number;
  /** Replay exactly these case seeds instead of drawing them. */
  caseSeeds?: number[];
  log?: (line: string) => void;
}

export interface FuzzReport {
  cases: number;
  byListener: Record<string, number>;
}

/** The key prefix of the fuzzer's own acknowledged writes; no case can touch it (see cases.ts). */
const ackedPrefix = '\u0001acked/';
const answerWaitMs = 150;

function withTimeout<T>(p: Promise<T>, ms: number, what: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`${what}: no answer in ${ms} ms`)), ms);
  });
  return Promise.race([p, timeout]).finally(() => clearTimeout(timer));
}

export function describeCase(c: FuzzCase): string {
  const shown = c.bytes.subarray(0, 400);
  const text = shown.toString('latin1').replace(/[^\x20-\x7e]/g, '.');
  return `case seed ${c.seed} (${c.listener}, ${c.bytes.length} bytes, then ${c.then}): ${c.name}\n    replay: npm run fuzz -- --case ${c.seed}\n    text: ${text}\n    hex:  ${shown.toString('hex')}`;
}

async function send(member: ServerProcess, c: FuzzCase): Promise<void> {
  const port = c.port === 'peer' ? member.peerPort : member.clientPort;
  await sendRaw(port, c.bytes, { then: c.then, waitMs: c.then === 'close' ? 20 : answerWaitMs });
}

class Checker {
  readonly #client: Etcd3;
  readonly #member: ServerProcess;
  readonly #acked = new Map<string, string>();

  constructor(member: ServerProcess) {
    this.#member = member;
    this.#client = clientOf(member);
  }

  async check(full: boolean): Promise<void> {
    // A crash comes a turn or two after the input that caused it.
    await new Promise((r) => setTimeout(r, 20));
    if (this.#member.proc.exitCode !== null || this.#member.proc.signalCode !== null) throw new Error('the member exited');
    const key = `${ackedPrefix}${this.#acked.size}`;
    const value = `v${this.#acked.size}`;
    await withTimeout(this.#client.put(key).value(value).exec(), 5000, 'put');
    this.#acked.set(key, value);
    const got = await withTimeout(this.#client.get(key).string(), 5000, 'get');
    if (got !== value) throw new Error(`read ${String(got)} for ${key}, wrote ${value}`);
    if (!full) return;
    const all = await withTimeout(this.#client.getAll().prefix(ackedPrefix).strings(), 5000, 'range');
    for (const [k, v] of this.#acked) if (all[k] !== v) throw new Error(`acknowledged write ${k}=${v} reads ${String(all[k])}`);
  }
}

export async function runFuzz(member: ServerProcess, o: FuzzOptions): Promise<FuzzReport> {
  const batch = o.batch ?? 8;
  const seeds = new Prng(o.seed);
  const checker = new Checker(member);
  const report: FuzzReport = { cases: 0, byListener: {} };
  await checker.check(true);
  for (let batchNo = 0; ; batchNo++) {
    const left = o.caseSeeds !== undefined ? o.caseSeeds.length - report.cases : o.casesMax - report.cases;
    if (left <= 0 || Date.now() > o.deadlineMs) break;
    const cases = Array.from({ length: Math.min(batch, left) }, (_, i) =>
      fuzzCase(o.caseSeeds !== undefined ? o.caseSeeds[report.cases + i]! : seeds.int(2 ** 32)));
    try {
      await Promise.all(cases.map((c) => send(member, c)));
      await checker.check(batchNo % 10 === 9);
    } catch (err) {
      const lines = member.output.slice(-25).join('\n');
      throw new Error(`fuzz run seed ${o.seed}: after ${report.cases + cases.length} cases: ${(err as Error).message}\n` +
        `the failing batch (one of these):\n${cases.map(describeCase).join('\n')}\nmember output:\n${lines}`);
    }
    report.cases += cases.length;
    for (const c of cases) report.byListener[c.listener] = (report.byListener[c.listener] ?? 0) + 1;
    if (batchNo % 50 === 49) o.log?.(`${report.cases} cases, ${JSON.stringify(report.byListener)}`);
  }
  await checker.check(true);
  return report;
}
