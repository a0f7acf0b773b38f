/**
 * Second build step (after tsc): bundles the `etcetera` command into one file, written over tsc's
 * dist/src/main/cli.js, so the bin, `npm start` and the e2e tests all run the bundle.
 *
 * Why (issue 15, start-to-serving): the unbundled command loads ~430 ES and CommonJS modules; resolving,
 * reading and compiling them one by one cost ~120 ms of CPU before the first line of etcetera ran
 * (`etcetera version`: 250 ms of CPU unbundled, 150 ms bundled, node alone 50 ms; measured with
 * /usr/bin/time, median of 9). The library (dist/src/index.js) stays tsc's unbundled modules.
 *
 * Split at cli.ts's dynamic imports (issue 24): each command loads only its own chunks, so `etcetera witness`
 * never evaluates the gRPC server, the protobuf descriptors, LevelDB or bcrypt. The chunks sit beside cli.js
 * (cli-chunk-*.js), so paths resolved from import.meta.url (protos/) are the same in every chunk.
 *
 * The S3 client (minio, pure JS, issue 36) is bundled: s3-store.ts imports it with import(), so it lands in a
 * chunk of its own (~1.2 MB) that only a member or command with --etcd-s3 loads (7.4 MB of RSS bundled against
 * 33 MB from node_modules: README "Backups off the board").
 *
 * Packages with native addons stay external: they find their binaries relative to their own files.
 * The bundled CommonJS packages (grpc-js, protobufjs) call require() for Node's built-ins: the banner
 * gives the ES module a real one.
 */
import { build } from 'esbuild';
import { execFileSync } from 'node:child_process';
import { chmodSync, readFileSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

const root = fileURLToPath(new URL('..', import.meta.url));
const outdir = `${root}dist/src/main`;
const outfile = `${outdir}/cli.js`;
// Chunks of an earlier build: their names carry content hashes, so stale ones would pile up.
for (const f of readdirSync(outdir)) if (f.startsWith('cli-chunk-')) rmSync(`${outdir}/${f}`);

/**
 * The build version the command reports and announces to its peers (src/config/build-info.ts): package.json's
 * version, with the commit as semver build metadata when built from a git checkout (never compared).
 */
function buildVersion() {
  const { version } = JSON.parse(readFileSync(`${root}package.json`, 'utf8'));
  try {
    const describe = execFileSync('git', ['describe', '--always', '--dirty'], { cwd: root, encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] }).trim();
    return describe === '' ? version : `${version}+${describe}`;
  } catch {
    return version; // not a git checkout (an npm tarball)
  }
}

const result = await build({
  absWorkingDir: root,
  metafile: true,
  entryPoints: { cli: `${root}src/main/cli.ts` },
  outdir,
  splitting: true,
  chunkNames: 'cli-chunk-[hash]',
  bundle: true,
  platform: 'node',
  format: 'esm',
  target: 'node20',
  external: ['classic-level', 'better-sqlite3', 'msgpackr', '@node-rs/bcrypt'],
  banner: { js: "import { createRequire as __etceteraRequire } from 'node:module';\nconst require = __etceteraRequire(import.meta.url);" },
  define: { __ETCETERA_BUILD__: JSON.stringify(buildVersion()) },
  // V8 keeps every module's source text on its heap (for lazy compilation and Function#toString), and a chunk
  // with one non-ASCII character in a comment (≤, →) is held as a two-byte string: a member at rest held
  // 2.4 MB of chunk sources in its large-object space. Whitespace and comments out: 1.2 MB (issue 34). Names
  // stay (no identifier or syntax minification: minifySyntax + keepNames measured 12 MB more RssAnon at
  // rest, V8 compiling eagerly what it had left lazy), and the source map still maps stack traces back.
  minifyWhitespace: true,
  sourcemap: true, // stack traces map back to src/ under node --enable-source-maps
  logLevel: 'warning',
});
chmodSync(outfile, 0o755);
// Which chunk holds which package and imports which chunk (test/e2e/witness-bundle.test.ts reads it: the
// minified chunks carry no `// node_modules/...` markers). Outside dist/src, so npm does not ship it.
writeFileSync(`${root}dist/cli-bundle.meta.json`, JSON.stringify(result.metafile));
