/**
 * The import layers of src/ (STYLE.md, "Layout: layers you can see"; issue 23), checked by `npm run lint:layers`,
 * which `npm test` runs first. Each folder imports only from the folders below it, type-only imports included
 * (tsPreCompilationDeps). Bottom to top:
 *
 *   base                       assert, clock and scheduler ports, prng, bytes, limits   (imports nothing)
 *   raft, mvcc, bbolt          the pure cores                                            (base)
 *   auth                       users, roles, permissions as pure state                   (base, mvcc)
 *   wal                        the durable Raft log                                      (base, raft)
 *   config → metrics → tls     flags and options, the Prometheus registry, TLS policy
 *   peer                       the member-to-member Raft transport (etcd's rafthttp): knows nothing of the member
 *   storage                    a member's files: LevelDB backend, identity, --wal-dir, received snapshots, members bucket
 *   etcd-db                    etcd's bolt-file format: its schema and buckets, the snapshot export and reading (etcd's schema)
 *   node                       the replicated member (etcd's etcdserver): the server only
 *   join                       the join protocol: a new member asks the cluster to add it (--server, --token)
 *   api                        gRPC services, gateway, Lock/Election, embedded client (api/v3rpc)
 *   backup                     snapshot files, restore, reset, migration, schedules (etcdutl)
 *   main                       the composition root and the CLI; src/index.ts re-exports the library
 *
 * base, raft, mvcc and auth are deterministic: no Node built-in, no package (LevelDB, gRPC, msgpack), only
 * relative imports (test/raft/purity.test.ts also bans the clock, timers, process and Math.random there).
 */
const cores = {
  base: [],
  raft: ['base'],
  mvcc: ['base'],
  bbolt: ['base'],
  auth: ['base', 'mvcc'],
  wal: ['base', 'raft'],
};
const upper = ['config', 'metrics', 'tls', 'peer', 'storage', 'etcd-db', 'node', 'join', 'api', 'backup', 'main'];

const allowed = { ...cores };
upper.forEach((folder, i) => {
  allowed[folder] = [...Object.keys(cores), ...upper.slice(0, i)];
});

const layerRules = Object.entries(allowed).map(([folder, below]) => ({
  name: `layer-${folder}`,
  comment: `src/${folder} imports only from the folders below it: ${below.length ? below.join(', ') : 'none'}`,
  severity: 'error',
  from: { path: `^src/${folder}/` },
  to: { path: '^src/', pathNot: `^src/(${[folder, ...below].join('|')})/` },
}));

module.exports = {
  forbidden: [
    ...layerRules,
    {
      name: 'deterministic-core-imports-nothing-outside',
      comment: 'base, raft, mvcc and auth import no Node built-in and no package (LevelDB, gRPC, msgpack ...)',
      severity: 'error',
      from: { path: '^src/(base|raft|mvcc|auth)/' },
      to: { dependencyTypesNot: ['local'] },
    },
    {
      name: 'grpc-only-at-the-api',
      comment: 'the member and the layers below it know nothing of a gRPC library: the error table names codes as the gRPC specification does, api/grpc maps them (metrics instruments the gRPC server it is given)',
      severity: 'error',
      from: { path: '^src/(base|raft|mvcc|bbolt|auth|wal|config|tls|storage|etcd-db|node)/' },
      to: { path: '@grpc/grpc-js' },
    },
    {
      name: 'no-unresolvable',
      comment: 'every import resolves (a moved file must not leave a dangling import behind); better-sqlite3 is an optional dependency, absent where it could not be built, and loaded only by migrate --from-kine',
      severity: 'error',
      from: { path: '^src/' },
      to: { couldNotResolve: true, pathNot: '^better-sqlite3$' },
    },
    {
      name: 'no-cycles-outside-raft-steps',
      comment:
        'no import cycles between files, except among raft/ and its step files (raft.ts dispatches to them)',
      severity: 'error',
      from: { path: '^src/', pathNot: '^src/raft/' },
      to: { circular: true },
    },
  ],
  options: {
    doNotFollow: { path: 'node_modules' },
    exclude: { path: '^(test|bench|dist)/' },
    tsPreCompilationDeps: true,
    tsConfig: { fileName: 'tsconfig.json' },
    // Packages are resolved as Node resolves this ESM code's imports (the `exports` map's import/node/default
    // conditions): https-proxy-agent exports only those, and the resolver's defaults missed it.
    enhancedResolveOptions: { extensions: ['.ts', '.js'], exportsFields: ['exports'], conditionNames: ['import', 'node', 'default'] },
  },
};
