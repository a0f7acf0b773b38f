/**
 * Summarises V8 .cpuprofile files (node --cpu-prof): self time per function and per source file, top first,
 * so a missed target comes with where the server's single thread spent its time.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { join, relative } from 'node:path';

interface ProfileNode {
  id: number;
  callFrame: { functionName: string; url: string; lineNumber: number };
  hitCount?: number;
}

interface CpuProfile {
  nodes: ProfileNode[];
  samples?: number[];
  timeDeltas?: number[];
  startTime: number;
  endTime: number;
}

export interface FrameShare {
  frame: string;
  selfMs: number;
  percent: number;
}

function shortUrl(url: string, root: string): string {
  if (url === '') return '(native)';
  const path = url.startsWith('file://') ? url.slice(7) : url;
  return path.startsWith(root) ? relative(root, path) : path.replace(/^.*node_modules\//, 'node_modules/');
}

/** Self time per frame across every profile in `dir`; frames named "function file:line". */
export function summarizeProfiles(dir: string, root: string, top = 25): { byFunction: FrameShare[]; byFile: FrameShare[]; totalMs: number } {
  const fn = new Map<string, number>();
  const file = new Map<string, number>();
  let totalMs = 0;
  for (const name of readdirSync(dir).filter((f) => f.endsWith('.cpuprofile'))) {
    const p = JSON.parse(readFileSync(join(dir, name), 'utf8')) as CpuProfile;
    const byId = new Map(p.nodes.map((n) => [n.id, n]));
    const selfUs = new Map<number, number>();
    const samples = p.samples ?? [];
    const deltas = p.timeDeltas ?? [];
    // A sample's duration is the delta to the next sample (V8's own convention).
    for (let i = 0; i < samples.length; i++) {
      const d = deltas[i + 1] ?? 0;
      selfUs.set(samples[i]!, (selfUs.get(samples[i]!) ?? 0) + d);
    }
    for (const [id, us] of selfUs) {
      const n = byId.get(id);
      if (!n) continue;
      const ms = us / 1000;
      totalMs += ms;
      const f = shortUrl(n.callFrame.url, root);
      const key = `${n.callFrame.functionName || '(anonymous)'} ${f}:${n.callFrame.lineNumber + 1}`;
      fn.set(key, (fn.get(key) ?? 0) + ms);
      file.set(f, (file.get(f) ?? 0) + ms);
    }
  }
  const rank = (m: Map<string, number>): FrameShare[] =>
    [...m.entries()].sort((a, b) => b[1] - a[1]).slice(0, top).map(([frame, selfMs]) => ({ frame, selfMs, percent: (100 * selfMs) / totalMs }));
  return { byFunction: rank(fn), byFile: rank(file), totalMs };
}

export function profileMarkdown(s: ReturnType<typeof summarizeProfiles>): string {
  const lines = [`CPU profile: ${(s.totalMs / 1000).toFixed(1)} s of samples across members`, '', '| self % | self ms | function |', '|---|---|---|'];
  for (const f of s.byFunction) lines.push(`| ${f.percent.toFixed(1)} | ${f.selfMs.toFixed(0)} | ${f.frame} |`);
  lines.push('', '| self % | file |', '|---|---|');
  for (const f of s.byFile.slice(0, 15)) lines.push(`| ${f.percent.toFixed(1)} | ${f.frame} |`);
  return lines.join('\n');
}
