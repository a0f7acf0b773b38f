/**
 * What `etcetera witness` loads (issue 24): the built CLI bundle splits per command, and the witness's chunks
 * must not pull in what only a data member runs. One static import of the gRPC server, protobufjs, LevelDB or
 * bcrypt anywhere under main/witness.ts (or under cli.ts's own imports) put ~14 MB back on a witness's RSS.
 * Read from esbuild's metafile of the bundle (scripts/bundle-cli.mjs writes dist/cli-bundle.meta.json): the
 * packages bundled into each chunk, the packages with native addons it imports by name, and the chunks it
 * imports statically.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { cliPath, ensureBuilt } from './harness.js';

/** Loaded by a data member only (yaml: by a process reading a config file, on demand). */
const dataMemberOnly = ['@grpc/grpc-js', '@grpc/proto-loader', 'protobufjs', 'classic-level', '@node-rs/bcrypt', 'better-sqlite3', 'yaml'];

interface Output {
  entryPoint?: string;
  inputs: Record<string, unknown>;
  imports: { path: string; kind: string; external?: boolean }[];
}
type Outputs = Record<string, Output>;

function readMeta(): Outputs {
  return (JSON.parse(readFileSync(join(cliPath, '../../../cli-bundle.meta.json'), 'utf8')) as { outputs: Outputs }).outputs;
}

/** The output built from `entryPoint` (cli.ts, or a module cli.ts imports on demand). */
function outputOf(outputs: Outputs, entryPoint: string): string {
  const found = Object.keys(outputs).find((k) => outputs[k]!.entryPoint === entryPoint);
  if (found === undefined) throw new Error(`no bundle output for ${entryPoint}`);
  return found;
}

/** Every output loaded by static imports from `output` (dynamic import() is not followed: it loads on demand). */
function staticClosure(outputs: Outputs, output: string): Set<string> {
  const seen = new Set<string>();
  const visit = (name: string): void => {
    if (seen.has(name)) return;
    seen.add(name);
    for (const i of outputs[name]!.imports) if (i.kind === 'import-statement' && i.external !== true) visit(i.path);
  };
  visit(output);
  return seen;
}

/** Packages a set of outputs holds or imports by name. */
function packagesOf(outputs: Outputs, files: Set<string>): Set<string> {
  const found = new Set<string>();
  for (const f of files) {
    for (const input of Object.keys(outputs[f]!.inputs)) {
      const m = /(?:^|\/)node_modules\/((?:@[^/]+\/)?[^/]+)\//.exec(input);
      if (m) found.add(m[1]!);
    }
    for (const i of outputs[f]!.imports) if (i.external === true && i.kind === 'import-statement' && !i.path.startsWith('node:')) found.add(i.path);
  }
  return found;
}

describe('the witness command bundle', () => {
  it('loads no gRPC, protobuf, LevelDB or bcrypt: only what a witness runs', () => {
    ensureBuilt();
    const outputs = readMeta();
    const cli = outputOf(outputs, 'src/main/cli.ts');
    const witness = outputOf(outputs, 'src/main/witness.ts');
    expect(outputs[cli]!.imports.some((i) => i.path === witness && i.kind === 'dynamic-import'), 'cli.js imports the witness on demand').toBe(true);
    const loaded = packagesOf(outputs, new Set([...staticClosure(outputs, cli), ...staticClosure(outputs, witness)]));
    expect([...loaded].filter((p) => dataMemberOnly.includes(p))).toEqual([]);
    expect(loaded.has('msgpackr'), 'the WAL and peer frames use msgpackr').toBe(true);
    // The check can fail: a data member's closure holds them all.
    const memberLoads = packagesOf(outputs, staticClosure(outputs, outputOf(outputs, 'src/main/member.ts')));
    expect(dataMemberOnly.filter((p) => memberLoads.has(p)).sort()).toEqual(['classic-level', 'protobufjs']);
  });

  it('loads bcrypt on demand only, in a data member too: a member with auth off never maps it (issue 34)', () => {
    ensureBuilt();
    const outputs = readMeta();
    const member = staticClosure(outputs, outputOf(outputs, 'src/main/member.ts'));
    expect(packagesOf(outputs, member).has('@node-rs/bcrypt')).toBe(false);
    const onDemand = [...member].some((f) => outputs[f]!.imports.some((i) => i.path === '@node-rs/bcrypt' && i.kind === 'dynamic-import'));
    expect(onDemand, 'the member imports bcrypt with import()').toBe(true);
  });

  it('loads grpc-js and node:http2 on demand only: a member on our own frames (the default) never maps them (issue 34)', () => {
    ensureBuilt();
    const outputs = readMeta();
    const member = staticClosure(outputs, outputOf(outputs, 'src/main/member.ts'));
    const loaded = packagesOf(outputs, member);
    expect(['@grpc/grpc-js', '@grpc/proto-loader'].filter((p) => loaded.has(p))).toEqual([]);
    const http2Static = [...member].filter((f) => outputs[f]!.imports.some((i) => i.path === 'node:http2' && i.kind !== 'dynamic-import'));
    expect(http2Static, 'no chunk a member loads at start imports node:http2').toEqual([]);
    const transport = Object.keys(outputs).filter((f) => member.has(f) && 'src/api/grpc/grpc-transport.ts' in outputs[f]!.inputs);
    expect(transport, 'grpc-transport.ts is in the member').toHaveLength(1);
    const onDemand = outputs[transport[0]!]!.imports.filter((i) => i.kind === 'dynamic-import' && i.external !== true).map((i) => packagesOf(outputs, staticClosure(outputs, i.path)));
    expect(onDemand.some((p) => p.has('@grpc/grpc-js')), 'grpc-transport.ts imports grpc-js with import()').toBe(true);
  });
});
