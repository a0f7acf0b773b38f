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
import { chmodSync, readdirSync, rmSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

const root = fileURLToPath(new URL('..', import.meta.url));
const outdir = `${root}dist/src/main`;
const outfile = `${outdir}/cli.js`;
// Chunks of an earlier build: their names carry content hashes, so stale ones would pile up.
for (const f of readdirSync(outdir)) if (f.startsWith('cli-chunk-')) rmSync(`${outdir}/${f}`);

await build({
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
  sourcemap: true, // stack traces map back to src/ under node --enable-source-maps
  logLevel: 'warning',
});
chmodSync(outfile, 0o755);
