/**
 * The machine description, the aggregation of runs (A B A B → per system the mean of its runs) and the
 * markdown table with the ratio and the targets.
 */
import { execFileSync } from 'node:child_process';
import { existsSync, readFileSync, statSync } from 'node:fs';
import { etcetraCli, repoRoot } from './cluster.js';
import { cpus, loadavg, release, totalmem } from 'node:os';
import { targetMet, targets, mean, type Measure } from './measure.js';

export interface Machine {
  cpu: string;
  cores: number;
  memoryGiB: number;
  disk: string;
  kernel: string;
  node: string;
  etcd: string;
  loadAvgAtStart: number[];
  /** HEAD and the build time of dist/ at start: other work may rebuild dist during a long run. */
  commit: string;
  distBuiltAt: string;
  note: string;
}

function run(cmd: string, args: string[]): string {
  try {
    return execFileSync(cmd, args, { encoding: 'utf8', timeout: 5000 }).trim();
  } catch {
    return '';
  }
}

export function describeMachine(): Machine {
  const rootLine = readFileSync('/proc/mounts', 'utf8').split('\n').find((l) => l.split(' ')[1] === '/') ?? '';
  const [dev, , fs] = rootLine.split(' ');
  const lsblk = run('lsblk', ['-d', '-n', '-o', 'NAME,MODEL,ROTA,SIZE']).replace(/\s+/g, ' ');
  return {
    cpu: cpus()[0]?.model ?? 'unknown',
    cores: cpus().length,
    memoryGiB: Math.round(totalmem() / 2 ** 30),
    disk: `${dev ?? '?'} (${fs ?? '?'}) on /; ${lsblk || 'lsblk unavailable'}`,
    kernel: `Linux ${release()}`,
    node: process.version,
    etcd: run('/usr/bin/etcd', ['--version']).split('\n')[0] ?? 'absent',
    loadAvgAtStart: loadavg().map((x) => Math.round(x * 100) / 100),
    commit: run('git', ['-C', repoRoot, 'rev-parse', '--short', 'HEAD']) || 'unknown',
    distBuiltAt: existsSync(etcetraCli) ? statSync(etcetraCli).mtime.toISOString() : 'not built',
    note: 'shared machine: other jobs may run beside the benchmark; runs alternate etcd and etcetera (A B A B) so drift hits both',
  };
}

export interface Row {
  key: string;
  scenario: string;
  label: string;
  unit: string;
  better: 'higher' | 'lower';
  etcd: number[];
  etcetera: number[];
}

export class Results {
  readonly rows = new Map<string, Row>();
  readonly failures: { scenario: string; system: string; run: number; error: string }[] = [];

  add(scenario: string, system: 'etcd' | 'etcetera', measures: Measure[]): void {
    for (const m of measures) {
      let row = this.rows.get(m.key);
      if (!row) {
        row = { key: m.key, scenario, label: m.label, unit: m.unit, better: m.better, etcd: [], etcetera: [] };
        this.rows.set(m.key, row);
      }
      row[system].push(m.value);
    }
  }
}

function fmt(v: number, unit: string): string {
  if (!Number.isFinite(v)) return '–';
  const digits = Math.abs(v) >= 100 ? 0 : Math.abs(v) >= 10 ? 1 : 2;
  const n = v.toLocaleString('en-US', { maximumFractionDigits: digits, minimumFractionDigits: Number.isInteger(v) ? 0 : digits });
  return unit && unit !== '' ? `${n} ${unit}` : n;
}

function cell(values: number[], unit: string): string {
  if (values.length === 0) return '–';
  const m = fmt(mean(values), unit);
  if (values.length < 2) return m;
  return `${m} (${values.map((v) => fmt(v, '')).join(', ')})`;
}

export function markdown(results: Results, titles: Map<string, string>): string {
  const lines = ['| scenario | metric | etcd | etcetera | ratio | target |', '|---|---|---|---|---|---|'];
  for (const row of results.rows.values()) {
    const e = mean(row.etcd);
    const o = mean(row.etcetera);
    const ratio = e === 0 && o === 0 ? '–' : Number.isFinite(o / e) ? `${(o / e).toFixed(2)}×` : '–';
    const t = targets[row.key];
    const known = row.etcetera.length > 0 && (t?.kind === 'abs' || row.etcd.length > 0);
    const verdict = known && t ? (targetMet(t, e, o) ? ' **met**' : ' **missed**') : '';
    const target = t ? `${t.text}${verdict}` : '';
    lines.push(`| ${titles.get(row.scenario) ?? row.scenario} | ${row.label} | ${cell(row.etcd, row.unit)} | ${cell(row.etcetera, row.unit)} | ${ratio} | ${target} |`);
  }
  return lines.join('\n');
}

export function machineMarkdown(m: Machine, mode: string): string {
  return [
    `Machine: ${m.cpu}, ${m.cores} cores, ${m.memoryGiB} GiB, ${m.kernel}; disk ${m.disk}`,
    `Node ${m.node}; ${m.etcd}; etcetera at ${m.commit} (dist built ${m.distBuiltAt}); load average at start ${m.loadAvgAtStart.join(' ')}; mode ${mode}.`,
    `Note: ${m.note}. Cells: mean (each run).`,
  ].join('\n');
}
