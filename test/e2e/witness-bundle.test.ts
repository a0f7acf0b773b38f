/**
 * What `etcetera witness` loads (issue 24): the built CLI bundle splits per command, and the witness's chunks
 * must not pull in what only a data member runs. One static import of the gRPC server, protobufjs, LevelDB or
 * bcrypt anywhere under main/witness.ts (or under cli.ts's own imports) put ~14 MB back on a witness's RSS.
 * Read from the bundle itself: esbuild marks each bundled package file with a `// node_modules/...` comment,
 * and keeps packages with native addons as imports by name.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { cliPath, ensureBuilt } from './harness.js';

const dist = join(cliPath, '..');
/** Loaded by a data member only (yaml: by a process reading a config file, on demand). */
const dataMemberOnly = ['@grpc/grpc-js', '@grpc/proto-loader', 'protobufjs', 'classic-level', '@node-rs/bcrypt', 'better-sqlite3', 'yaml'];

/** Every file loaded by static imports from `file` (dynamic import() is not followed: it loads on demand). */
function staticClosure(file: string): Map<string, string> {
  const seen = new Map<string, string>();
  const visit = (name: string): void => {
    if (seen.has(name)) return;
    const text = readFileSync(join(dist, name), 'utf8');
    seen.set(name, text);
    for (const m of text.matchAll(/^import\s+(?:[^'"]*?\s+from\s+)?"\.\/(cli-chunk-\w+\.js)";?$/gms)) visit(m[1]!);
  };
  visit(file);
  return seen;
}

/** Packages a set of bundle files holds or imports by name. */
function packagesOf(files: Map<string, string>): Set<string> {
  const found = new Set<string>();
  for (const text of files.values()) {
    for (const m of text.matchAll(/^\/\/ node_modules\/((?:@[^/]+\/)?[^/]+)\//gm)) found.add(m[1]!);
    for (const m of text.matchAll(/^import\s+(?:[^'"]*?\s+from\s+)?"((?:@[^/."]+\/)?[^/."][^/"]*)";?$/gms)) found.add(m[1]!);
  }
  return found;
}

describe('the witness command bundle', () => {
  it('loads no gRPC, protobuf, LevelDB or bcrypt: only what a witness runs', () => {
    ensureBuilt();
    const cli = readFileSync(cliPath, 'utf8');
    const witnessChunk = /import\("\.\/(cli-chunk-\w+\.js)"\)\)\.startWitness/.exec(cli)?.[1];
    expect(witnessChunk, 'cli.js imports the witness on demand').toBeDefined();
    const member = /import\("\.\/(cli-chunk-\w+\.js)"\)\)\.startMember/.exec(cli)?.[1];
    const loaded = packagesOf(new Map([...staticClosure('cli.js'), ...staticClosure(witnessChunk!)]));
    expect([...loaded].filter((p) => dataMemberOnly.includes(p))).toEqual([]);
    expect(loaded.has('msgpackr'), 'the WAL and peer frames use msgpackr').toBe(true);
    // The check can fail: a data member's closure holds them all.
    const memberLoads = packagesOf(staticClosure(member!));
    expect(dataMemberOnly.filter((p) => memberLoads.has(p)).sort()).toEqual(['@grpc/grpc-js', '@grpc/proto-loader', '@node-rs/bcrypt', 'classic-level', 'protobufjs']);
  });
});
