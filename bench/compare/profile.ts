/**
 * Summarises V8 .cpuprofile files (node --cpu-prof): self time per function (with its heaviest caller, since
 * a native leaf like `writeBuffer` says little alone) and per source file, over all profiles and per profile
 * (one per member and cluster), so a missed target comes with where the server's single thread spent its time.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { join, relative } from 'node:path';

export interface ProfileNode {
  id: number;
  callFrame: { functionName: string; url: string; lineNumber: number };
  children?: number[];
}

export interface CpuProfile {
  nodes: ProfileNode[];
  samples?: number[];
  timeDeltas?: number[];
}

export interface FrameShare {
  frame: string;
  selfMs: number;
  percent: number;
  caller?: string;
}

export interface ProfileSummary {
  name: string;
  totalMs: number;
  idlePercent: number;
  byFunction: FrameShare[];
  byFile: FrameShare[];
}

function shortUrl(url: string, root: string): string {
  if (url === '') return '(native)';
  const path = url.startsWith('file://') ? url.slice(7) : url;
  return path.startsWith(root) ? relative(root, path) : path.replace(/^.*node_modules\//, 'node_modules/');
}

class Tally {
  fn = new Map<string, number>();
  file = new Map<string, number>();
  callers = new Map<string, Map<string, number>>();
  totalMs = 0;
  idleMs = 0;

  add(key: string, file: string, caller: string, ms: number): void {
    this.totalMs += ms;
    if (key.startsWith('(idle)')) this.idleMs += ms;
    this.fn.set(key, (this.fn.get(key) ?? 0) + ms);
    this.file.set(file, (this.file.get(file) ?? 0) + ms);
    let c = this.callers.get(key);
    if (!c) this.callers.set(key, (c = new Map()));
    c.set(caller, (c.get(caller) ?? 0) + ms);
  }

  summary(name: string, top: number): ProfileSummary {
    const rank = (m: Map<string, number>, withCaller: boolean): FrameShare[] =>
      [...m.entries()].sort((a, b) => b[1] - a[1]).slice(0, top).map(([frame, selfMs]) => {
        const share: FrameShare = { frame, selfMs, percent: (100 * selfMs) / this.totalMs };
        const callers = withCaller ? this.callers.get(frame) : undefined;
        if (callers) share.caller = [...callers.entries()].sort((a, b) => b[1] - a[1])[0]?.[0];
        return share;
      });
    return { name, totalMs: this.totalMs, idlePercent: (100 * this.idleMs) / this.totalMs, byFunction: rank(this.fn, true), byFile: rank(this.file, false) };
  }
}

function tallyProfile(p: CpuProfile, root: string, into: Tally[]): void {
  const byId = new Map(p.nodes.map((n) => [n.id, n]));
  const parent = new Map<number, number>();
  for (const n of p.nodes) for (const c of n.children ?? []) parent.set(c, n.id);
  const frameKey = (n: ProfileNode): string => `${n.callFrame.functionName || '(anonymous)'} ${shortUrl(n.callFrame.url, root)}:${n.callFrame.lineNumber + 1}`;
  const selfUs = new Map<number, number>();
  const samples = p.samples ?? [];
  const deltas = p.timeDeltas ?? [];
  // A sample lasts until the next one (V8's convention: timeDeltas[i + 1] is the gap after sample i).
  for (let i = 0; i < samples.length; i++) selfUs.set(samples[i]!, (selfUs.get(samples[i]!) ?? 0) + (deltas[i + 1] ?? 0));
  for (const [id, us] of selfUs) {
    const n = byId.get(id);
    if (!n) continue;
    const up = byId.get(parent.get(id) ?? -1);
    for (const t of into) t.add(frameKey(n), shortUrl(n.callFrame.url, root), up ? frameKey(up) : '(root)', us / 1000);
  }
}

/** Over every profile in `dir`, and for each one. */
export function summarizeProfiles(dir: string, root: string, top = 25): { all: ProfileSummary; each: ProfileSummary[] } {
  const all = new Tally();
  const each: ProfileSummary[] = [];
  for (const name of readdirSync(dir).filter((f) => f.endsWith('.cpuprofile')).sort()) {
    const one = new Tally();
    tallyProfile(JSON.parse(readFileSync(join(dir, name), 'utf8')) as CpuProfile, root, [all, one]);
    each.push(one.summary(name, 10));
  }
  return { all: all.summary('all members', top), each };
}

export function profileMarkdown(s: ReturnType<typeof summarizeProfiles>): string {
  const a = s.all;
  const lines = [`CPU profile: ${(a.totalMs / 1000).toFixed(1)} s of samples over ${s.each.length} processes, ${a.idlePercent.toFixed(0)} % idle`, '',
    '| self % | self ms | function | heaviest caller |', '|---|---|---|---|'];
  for (const f of a.byFunction) lines.push(`| ${f.percent.toFixed(1)} | ${f.selfMs.toFixed(0)} | ${f.frame} | ${f.caller ?? ''} |`);
  lines.push('', '| self % | file |', '|---|---|');
  for (const f of a.byFile.slice(0, 15)) lines.push(`| ${f.percent.toFixed(1)} | ${f.frame} |`);
  for (const e of s.each) {
    lines.push('', `${e.name}: ${(e.totalMs / 1000).toFixed(1)} s, ${e.idlePercent.toFixed(0)} % idle; top: ` +
      e.byFunction.filter((f) => !f.frame.startsWith('(idle)')).slice(0, 8).map((f) => `${f.frame.split(' ')[0]} ${f.percent.toFixed(1)}%`).join(', '));
  }
  return lines.join('\n');
}
