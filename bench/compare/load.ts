/**
 * Load shapes: closed loop (N clients, each sends its next request when the previous one answered, for a fixed
 * duration after a warm-up; optionally each paced to a share of an offered rate) and paced open loop (a fixed
 * offered rate, with a cap on requests in flight).
 * Latency is measured per request with performance.now() and kept as raw samples (a few hundred thousand at
 * most per run), so percentiles are exact.
 */
import { performance } from 'node:perf_hooks';

export interface LatencySummary {
  p50Ms: number;
  p99Ms: number;
  meanMs: number;
  maxMs: number;
}

export function summarize(samples: number[]): LatencySummary {
  if (samples.length === 0) return { p50Ms: NaN, p99Ms: NaN, meanMs: NaN, maxMs: NaN };
  const s = Float64Array.from(samples).sort();
  const at = (q: number): number => s[Math.min(s.length - 1, Math.floor(q * s.length))]!;
  let sum = 0;
  for (const v of s) sum += v;
  return { p50Ms: at(0.5), p99Ms: at(0.99), meanMs: sum / s.length, maxMs: s[s.length - 1]! };
}

export interface ClosedLoopResult extends LatencySummary {
  clients: number;
  ops: number;
  /** Successful requests including the warm-up (for per-request ratios of counters read around the run). */
  opsAll: number;
  errors: number;
  opsPerSec: number;
  firstError?: string;
}

export interface ClosedLoopOptions {
  clients: number;
  durationMs: number;
  warmupMs: number;
  /** One request by client `c` (its `seq`th); must reject on failure. */
  op: (c: number, seq: number) => Promise<unknown>;
  /**
   * Offered rate of all clients together: each client sends at most every clients/ratePerSec seconds (its
   * next request when the previous one answered and its next slot came). Absent: as fast as answers come.
   */
  ratePerSec?: number;
}

export async function closedLoop(o: ClosedLoopOptions): Promise<ClosedLoopResult> {
  const t0 = performance.now();
  const measureFrom = t0 + o.warmupMs;
  const stopAt = measureFrom + o.durationMs;
  const samples: number[] = [];
  let errors = 0;
  let opsAll = 0;
  let firstError: string | undefined;
  const slotMs = o.ratePerSec === undefined ? 0 : (o.clients * 1000) / o.ratePerSec;
  const worker = async (c: number): Promise<void> => {
    // Clients start spread over one slot, so a paced load is even from the first request.
    let due = t0 + (slotMs * c) / o.clients;
    for (let seq = 0; ; seq++) {
      const wait = due - performance.now();
      if (wait > 0) await new Promise((r) => setTimeout(r, wait));
      due += slotMs;
      const start = performance.now();
      if (start >= stopAt) return;
      try {
        await o.op(c, seq);
        opsAll++;
        if (start >= measureFrom) samples.push(performance.now() - start);
      } catch (e) {
        if (start >= measureFrom) errors++;
        firstError ??= String(e);
        // A failing server must not turn the loop into a busy spin.
        await new Promise((r) => setTimeout(r, 10));
      }
    }
  };
  await Promise.all(Array.from({ length: o.clients }, (_, c) => worker(c)));
  // Requests started before stopAt may finish after it: count them against the time they really took.
  const elapsedMs = Math.max(o.durationMs, performance.now() - measureFrom);
  const r: ClosedLoopResult = { clients: o.clients, ops: samples.length, opsAll, errors, opsPerSec: (samples.length / elapsedMs) * 1000, ...summarize(samples) };
  if (firstError !== undefined) r.firstError = firstError;
  return r;
}

export interface PacedResult extends LatencySummary {
  offered: number;
  ok: number;
  failed: number;
  /** Not sent because `maxInFlight` requests were already waiting. */
  skipped: number;
  achievedPerSec: number;
  errorsByMessage: Record<string, number>;
}

export interface PacedOptions {
  ratePerSec: number;
  durationMs: number;
  maxInFlight: number;
  op: (seq: number) => Promise<unknown>;
}

/** Open loop at a fixed rate; the run ends when the last request sent settles. */
export async function paced(o: PacedOptions): Promise<PacedResult> {
  const intervalMs = 1000 / o.ratePerSec;
  const t0 = performance.now();
  const samples: number[] = [];
  const errorsByMessage: Record<string, number> = {};
  let ok = 0;
  let failed = 0;
  let skipped = 0;
  let inFlight = 0;
  const pending: Promise<void>[] = [];
  const total = Math.floor((o.durationMs / 1000) * o.ratePerSec);
  for (let seq = 0; seq < total; seq++) {
    const due = t0 + seq * intervalMs;
    const wait = due - performance.now();
    if (wait > 0) await new Promise((r) => setTimeout(r, wait));
    if (inFlight >= o.maxInFlight) {
      skipped++;
      continue;
    }
    inFlight++;
    const start = performance.now();
    pending.push(
      o.op(seq).then(
        () => {
          ok++;
          samples.push(performance.now() - start);
        },
        (e: unknown) => {
          failed++;
          // grpc-js appends timings and addresses to deadline errors; group by the message proper.
          const msg = String(e instanceof Error ? e.message : e).replace(/ after [\d.]+s.*$/, '').slice(0, 80);
          errorsByMessage[msg] = (errorsByMessage[msg] ?? 0) + 1;
        },
      ).finally(() => inFlight--),
    );
  }
  await Promise.all(pending);
  return { offered: total, ok, failed, skipped, achievedPerSec: ok / (o.durationMs / 1000), errorsByMessage, ...summarize(samples) };
}
