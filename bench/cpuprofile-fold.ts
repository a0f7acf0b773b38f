/**
 * `npx tsx bench/cpuprofile-fold.ts OUT.folded PROFILE.cpuprofile...`: V8 CPU profiles (node --cpu-prof, as
 * `npm run bench:compare -- --cpu-prof` keeps them) as folded stacks, the flame graph's input format
 * (Brendan Gregg's: one line per distinct stack, frames root first joined by ';', then the milliseconds spent
 * in it). Render with speedscope (https://www.speedscope.app, drop the file in) or flamegraph.pl. Several
 * profiles fold into one file (a cluster's members), each stack prefixed with its profile's name; the
 * (idle) and (program) roots are kept, so the share of time the thread slept is on the graph too. Stacks
 * under FOLD_MS_MIN milliseconds (default 2: two samples at --cpu-prof's 1 ms interval) are left out.
 */
import { readFileSync, writeFileSync } from 'node:fs';
import { basename } from 'node:path';
import type { CpuProfile, ProfileNode } from './compare/profile.js';

function frameName(node: ProfileNode): string {
  const { functionName, url, lineNumber } = node.callFrame;
  const name = functionName === '' ? '(anonymous)' : functionName;
  if (url === '') return name;
  const file = url.replace(/^file:\/\//, '').replace(/^.*\/(node_modules\/)/, '$1').replace(/^.*\/(src|dist|bench)\//, '$1/');
  return `${name} ${file}:${lineNumber + 1}`.replaceAll(';', ',');
}

export function fold(profile: CpuProfile, prefix: string): Map<string, number> {
  const byId = new Map(profile.nodes.map((n) => [n.id, n]));
  const parent = new Map<number, number>();
  for (const n of profile.nodes) for (const c of n.children ?? []) parent.set(c, n.id);
  const stacks = new Map<number, string>();
  const stackOf = (id: number): string => {
    const known = stacks.get(id);
    if (known !== undefined) return known;
    const up = parent.get(id);
    const node = byId.get(id)!;
    // The root node is "(root)": the stack starts below it.
    const own = up === undefined ? prefix : `${stackOf(up)};${frameName(node)}`;
    stacks.set(id, own);
    return own;
  };
  const out = new Map<string, number>();
  const deltas = profile.timeDeltas ?? [];
  (profile.samples ?? []).forEach((id, i) => {
    const ms = (deltas[i] ?? 0) / 1000;
    const stack = stackOf(id);
    out.set(stack, (out.get(stack) ?? 0) + ms);
  });
  return out;
}

const [outFile, ...inputs] = process.argv.slice(2);
if (outFile === undefined || inputs.length === 0) {
  console.error('usage: cpuprofile-fold.ts OUT.folded PROFILE.cpuprofile...');
  process.exit(2);
}
const all = new Map<string, number>();
for (const file of inputs) {
  const profile = JSON.parse(readFileSync(file, 'utf8')) as CpuProfile;
  for (const [stack, ms] of fold(profile, basename(file, '.cpuprofile'))) all.set(stack, (all.get(stack) ?? 0) + ms);
}
// Stacks under this are dropped: they are most of the lines and none of the picture.
const stackMsMin = Number(process.env['FOLD_MS_MIN'] ?? '2');
const lines = [...all].filter(([, ms]) => ms >= stackMsMin).map(([stack, ms]) => `${stack} ${ms.toFixed(2)}`);
writeFileSync(outFile, `${lines.sort().join('\n')}\n`);
console.log(`${outFile}: ${lines.length} stacks from ${inputs.length} profile(s)`);
