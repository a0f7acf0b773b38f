/**
 * The deterministic core (src/base, src/raft, src/mvcc, src/auth) must not touch Node, the network, the disk, the
 * clock, or global randomness. This scan keeps it so. The LevelDB adapter of mvcc's backend port lives in src/node.
 */
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join, relative } from 'node:path';
import { describe, expect, it } from 'vitest';

const root = join(import.meta.dirname, '..', '..');
const scanned = ['src/base', 'src/raft', 'src/mvcc', 'src/auth'];
const exempt = new Set<string>();
const bannedTokens = ['Date', 'Math.random', 'setTimeout', 'setInterval', 'setImmediate', 'process.', 'performance.'];

function tsFiles(dir: string): string[] {
  const out: string[] = [];
  for (const name of readdirSync(dir)) {
    const p = join(dir, name);
    if (statSync(p).isDirectory()) out.push(...tsFiles(p));
    else if (name.endsWith('.ts')) out.push(p);
  }
  return out;
}

/** Remove comments and string contents (keeping import specifiers, which are checked separately). */
export function stripComments(src: string): string {
  return src.replace(/\/\*[\s\S]*?\*\//g, ' ').replace(/(^|[^:\\])\/\/.*$/gm, '$1');
}

export function violations(src: string): string[] {
  const code = stripComments(src);
  const found: string[] = [];
  const specifiers = [
    ...code.matchAll(/\b(?:import|export)\b[^;]*?\bfrom\s*['"]([^'"]+)['"]/g),
    ...code.matchAll(/\bimport\s*\(\s*['"]([^'"]+)['"]\s*\)/g),
    ...code.matchAll(/\bimport\s+['"]([^'"]+)['"]/g),
    ...code.matchAll(/\brequire\s*\(\s*['"]([^'"]+)['"]\s*\)/g),
  ].map((m) => m[1]!);
  for (const s of specifiers) if (!s.startsWith('./') && !s.startsWith('../')) found.push(`import '${s}'`);
  if (/\brequire\s*\(/.test(code)) found.push('require(');
  for (const t of bannedTokens) {
    const re = new RegExp(`(^|[^A-Za-z0-9_$.])${t.replace('.', '\\.')}${t.endsWith('.') ? '' : '(?![A-Za-z0-9_$])'}`);
    if (re.test(code)) found.push(t);
  }
  return found;
}

describe('purity of the deterministic core', () => {
  const files = scanned.flatMap((d) => tsFiles(join(root, d))).map((f) => relative(root, f));

  it('finds the files it is meant to scan', () => {
    expect(files).toContain('src/raft/raw-node.ts');
    expect(files).toContain('src/base/assert.ts');
  });

  for (const f of files) {
    if (exempt.has(f)) continue;
    it(`${f} imports only relative modules and uses no clock, timers, process or Math.random`, () => {
      expect(violations(readFileSync(join(root, f), 'utf8'))).toEqual([]);
    });
  }

  const caught: [string, string][] = [
    ["import { readFileSync } from 'node:fs';", "import 'node:fs'"],
    ["import net from 'net';", "import 'net'"],
    ["export { x } from 'msgpackr';", "import 'msgpackr'"],
    ["const m = await import('classic-level');", "import 'classic-level'"],
    ['const t = Date.now();', 'Date'],
    ['const r = Math.random();', 'Math.random'],
    ['setTimeout(f, 1);', 'setTimeout'],
    ['queueMicrotask(() => setImmediate(f));', 'setImmediate'],
    ['if (process.env.X) {}', 'process.'],
    ['performance.now()', 'performance.'],
  ];
  for (const [src, want] of caught) {
    it(`catches ${want} in: ${src}`, () => {
      expect(violations(src)).toContain(want);
    });
  }

  it('ignores banned words in comments and inside identifiers', () => {
    expect(violations('// Date.now() in a comment\n/* setTimeout */ const updated = 1; const myDate = 2;')).toEqual([]);
    expect(violations("import { x } from './x.js';")).toEqual([]);
  });
});
