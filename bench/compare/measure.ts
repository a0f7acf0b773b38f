/**
 * What a scenario run produces (measures) and what the issue asks of them (targets), plus the run context
 * every scenario receives.
 */
import type { ClusterOptions, System } from './cluster.js';

export interface Measure {
  /** Stable key, e.g. "puts.3m.16c.rate"; targets and the JSON refer to it. */
  key: string;
  label: string;
  unit: string;
  better: 'higher' | 'lower';
  value: number;
}

export interface Target {
  /** "ratio": etcetera / etcd; "abs": etcetera's own value. */
  kind: 'ratio' | 'abs';
  min?: number;
  max?: number;
  /** The line, for the report. */
  text: string;
}

export const targets: Record<string, Target> = {
  'puts.3m.16c.rate': { kind: 'ratio', min: 1.2, text: '≥ 1.2× etcd' },
  'puts.3m.256c.rate': { kind: 'ratio', min: 1.2, text: '≥ 1.2× etcd' },
  'puts.1m.1c.p50': { kind: 'ratio', max: 1.1, text: '≤ 1.1× etcd' },
  'slow.1m.16c.rate': { kind: 'ratio', min: 1.5, text: '≥ 1.5× etcd' },
  'rest.fsyncs': { kind: 'abs', max: 7.5, text: '≤ 7.5' },
  'rest.kbps': { kind: 'ratio', max: 0.5, text: '≤ 0.5× etcd' },
  'rest.rss': { kind: 'abs', max: 80, text: '≤ 80 MB' },
  'stall.elections': { kind: 'abs', max: 0, text: '0' },
  'stall.failed': { kind: 'abs', max: 0, text: '0' },
  'stall.rate': { kind: 'abs', min: 45, text: '≥ 45' },
  // Issue 15: a leader's slow fsync must not hold replies a quorum made durable.
  'stall.closed.rate': { kind: 'ratio', min: 2.5, text: '≥ 2.5× etcd' },
  'stall.closed.elections': { kind: 'abs', max: 0, text: '0' },
  'stall.closed.failed': { kind: 'abs', max: 0, text: '0' },
  'stall.closed.p99': { kind: 'abs', max: 1500, text: '< 1500 ms (the stall)' },
  // Issue 10 (bounded memory).
  'mem1.peak': { kind: 'ratio', max: 1.0, text: '≤ 1.0× etcd' },
  'mem1.rest': { kind: 'ratio', max: 1.0, text: '≤ 1.0× etcd' },
  'mem1.restart': { kind: 'ratio', max: 1.0, text: '≤ 1.0× etcd' },
  'mem1.bpp': { kind: 'ratio', max: 1.0, text: '≤ 1.0× etcd' },
  'mem3.catchup': { kind: 'ratio', max: 2.0, text: '≤ 2.0× etcd' },
  'mem3.catchup.rss': { kind: 'ratio', max: 1.2, text: '≤ 1.2× etcd' },
  'cg.oom': { kind: 'abs', max: 0, text: '0' },
  // Issue 22 (CPU per request; memory that holds under a concurrent load).
  'cg.acked': { kind: 'abs', min: 99, text: '≥ 99 %' },
  'cg.alive': { kind: 'abs', min: 1, text: 'serving' },
  'puts.1m.16c.cpuput': { kind: 'ratio', max: 1.0, text: '≤ 1.0× etcd' },
  'puts.3m.16c.cpuput': { kind: 'ratio', max: 1.0, text: '≤ 1.0× etcd' },
  'rest.cpu.ms': { kind: 'ratio', max: 1.0, text: '≤ 1.0× etcd' },
  'puts.3m.1c.p50': { kind: 'ratio', max: 1.2, text: '≤ 1.2× etcd' },
  // Issue 24 (a witness as the third voter): its RSS, and its disk the log tail plus a few MiB.
  'wit.third.rss': { kind: 'abs', max: 40, text: '≤ 40 MB' },
  'wit.third.disk': { kind: 'abs', max: 4, text: '≤ tail + a few MiB (4)' },
};

export function targetMet(t: Target, etcd: number, ours: number): boolean {
  const v = t.kind === 'ratio' ? ours / etcd : ours;
  if (!Number.isFinite(v)) return false;
  return (t.min === undefined || v >= t.min) && (t.max === undefined || v <= t.max);
}

export interface RunContext {
  system: System;
  quick: boolean;
  lowEnd: boolean;
  /** Extra cluster options the mode adds (low-end caps and SD-card fsync latency, CPU profiling). */
  clusterDefaults: Partial<ClusterOptions>;
  /** The puts scenarios' client counts when --clients narrows them (1-client latency runs). */
  clients?: number[];
  log: (line: string) => void;
}

export interface Scenario {
  name: string;
  title: string;
  /** Rough wall-clock seconds per run (for the plan printed at start). */
  seconds(quick: boolean): number;
  run(ctx: RunContext): Promise<Measure[]>;
  /** Not run in low-end mode (when the mode already makes it identical to another scenario). */
  skipLowEnd?: boolean;
}

/** Scales a full-run duration down for --quick smoke runs. */
export function dur(ctx: { quick: boolean }, fullMs: number, quickMs: number): number {
  return ctx.quick ? quickMs : fullMs;
}

export function mean(xs: number[]): number {
  return xs.length === 0 ? NaN : xs.reduce((a, b) => a + b, 0) / xs.length;
}
