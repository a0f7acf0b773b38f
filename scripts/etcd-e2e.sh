#!/bin/sh
# etcd 3.4's own end-to-end suite (tests/e2e, the real etcdctl against spawned servers) run against etcetera:
# Debian's packaged sources (golang-etcd-server-dev, built with golang-go; both from apt, nothing is fetched
# here), with -bin-dir pointing at a directory whose `etcd` starts `etcetera server` with the flags the suite
# gives and whose `etcdctl` is Debian's. Prints the failing tests and the pass count.
#
#   npm run build && scripts/etcd-e2e.sh ['TestCtlV3' (a -test.run pattern)] [--etcd]   (--etcd: the real etcd)
#
# Measured 2026-12-03 (2 cores, ~12 min each): TestCtlV3*, etcetera 169 of 171, etcd 3.4.23 170 of 171. Both
# fail TestCtlV3Migrate (the v2 API); etcetera also TestCtlV3Alarm, whose only difference is that /health
# answers as etcd 3.5 does ({"health":"false","reason":"ALARM NOSPACE"}), as the version we report.
set -eu
pattern=${1:-TestCtlV3}
real=${2:-}
repo=$(cd "$(dirname "$0")/.." && pwd)
src=/usr/share/gocode/src/go.etcd.io/etcd/tests/e2e
for need in /usr/bin/go "$src/ctl_v3_test.go" /usr/bin/etcdctl "$repo/dist/src/main/cli.js"; do
  [ -e "$need" ] || { echo "missing $need (apt-get install golang-go golang-etcd-server-dev etcd-client; npm run build)" >&2; exit 2; }
done
work=$(mktemp -d /tmp/etcetera-etcd-e2e-XXXXXX)
trap 'rm -rf "$work"' EXIT
mkdir -p "$work/bin"
# etcd's harness waits for two lines per start: "enabled capabilities for version" and "published". A member
# logs "published member attributes" at every start; the first line is etcd's own wording, added by this
# preload when the member logs that it serves clients (the harness alone needs it, so it stays out of the server).
cat > "$work/ready-line.mjs" <<'EOF'
for (const stream of [process.stdout, process.stderr]) {
  const write = stream.write.bind(stream);
  let said = false;
  stream.write = (chunk, ...rest) => {
    const r = write(chunk, ...rest);
    if (!said && String(chunk).includes('serving client requests')) {
      said = true;
      write('enabled capabilities for version 3.5 (etcetera serves client requests)\n');
    }
    return r;
  };
}
EOF
if [ "$real" = "--etcd" ]; then
  ln -s /usr/bin/etcd "$work/bin/etcd"
else
  printf '#!/bin/sh\nexec node --import %s %s server "$@"\n' "$work/ready-line.mjs" "$repo/dist/src/main/cli.js" > "$work/bin/etcd"
  chmod +x "$work/bin/etcd"
fi
ln -s /usr/bin/etcdctl "$work/bin/etcdctl"
echo "building $src" >&2
GOPATH=/usr/share/gocode GO111MODULE=off GOCACHE="${GOCACHE:-$HOME/.cache/go-build}" go test -c -o "$work/e2e.test" go.etcd.io/etcd/tests/e2e
cd "$src"
"$work/e2e.test" -bin-dir "$work/bin" -test.run "$pattern" -test.v -test.timeout 60m > "$work/log" 2>&1 || true
grep -E '^--- FAIL' "$work/log" || true
server=etcetera
[ "$real" = "--etcd" ] && server=etcd
echo "pass $(grep -c '^--- PASS' "$work/log") fail $(grep -c '^--- FAIL' "$work/log") ($pattern, $server)"
