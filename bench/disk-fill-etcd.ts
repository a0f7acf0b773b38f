/**
 * Debian's etcd 3.4 under the disk-fill e2e's scenario (test/e2e/disk-fill-writer.test.ts, issue 32 item 1),
 * for the README's side-by-side: a 64 MiB tmpfs (root), four clients putting 64 KiB random values back to
 * back; then, if etcd is still up, `del --prefix`, `compaction`, `defrag`, `alarm disarm` and one more put;
 * then a start on that disk filled to the last byte. Prints what happened at each step, per round.
 *
 *   npx tsx bench/disk-fill-etcd.ts [--rounds 5]
 */
import { spawn, spawnSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdirSync, mkdtempSync, rmSync, statfsSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Etcd3 } from 'etcd3';
import { noop } from 'cockatiel';
import { freePort } from '../test/e2e/harness.js';

const rounds = Number(process.argv[process.argv.indexOf('--rounds') + 1] || 5);
const mnt = mkdtempSync(join(tmpdir(), 'etcd-fill-'));
if (spawnSync('mount', ['-t', 'tmpfs', '-o', 'size=64m', 'tmpfs', mnt]).status !== 0) throw new Error('mount -t tmpfs needs root');
const free = (): number => {
  const s = statfsSync(mnt);
  return s.bavail * s.bsize;
};
const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

function start(dataDir: string, client: number, peer: number) {
  const c = `http://127.0.0.1:${client}`;
  const p = `http://127.0.0.1:${peer}`;
  const proc = spawn('/usr/bin/etcd', ['--name', 's', '--data-dir', dataDir, '--listen-client-urls', c, '--advertise-client-urls', c,
    '--listen-peer-urls', p, '--initial-advertise-peer-urls', p, '--initial-cluster', `s=${p}`], { stdio: ['ignore', 'pipe', 'pipe'] });
  const out: string[] = [];
  proc.stdout.on('data', (b: Buffer) => out.push(...b.toString().split('\n')));
  proc.stderr.on('data', (b: Buffer) => out.push(...b.toString().split('\n')));
  const exited = new Promise<string>((r) => proc.once('exit', (code, sig) => r(String(code ?? sig))));
  return { proc, out, exited, url: c, alive: () => proc.exitCode === null && proc.signalCode === null };
}

const ctl = (url: string, args: string[]) => spawnSync('/usr/bin/etcdctl', ['--endpoints', url, '--command-timeout', '20s', ...args], { encoding: 'utf8', env: { ...process.env, ETCDCTL_API: '3' } });
const lastError = (out: string[]): string => (out.filter((l) => /panic|fatal|no space|ENOSPC/i.test(l)).at(-1) ?? '').slice(0, 240);

for (let n = 1; n <= rounds; n++) {
  const dataDir = join(mnt, `r${n}`);
  mkdirSync(dataDir, { mode: 0o700 });
  const [client, peer] = [await freePort(), await freePort()];
  const e = start(dataDir, client, peer);
  const raw = () => new Etcd3({ hosts: e.url, dialTimeout: 2000, faultHandling: { host: () => noop, global: noop } });
  let up = false;
  for (let i = 0; i < 100 && !up && e.alive(); i++) up = await raw().put('probe').value('1').then(() => true, () => (sleep(100).then(() => false)));
  const report: Record<string, unknown> = { round: n, started: up, freeAtStart: free() };
  if (up) {
    let acked = 0;
    let refused = '';
    let minFree = free();
    const t0 = Date.now();
    await Promise.all(Array.from({ length: 4 }, async () => {
      const c = raw();
      while (e.alive() && refused === '' && Date.now() - t0 < 60_000) {
        try {
          await c.put(`/fill/${randomBytes(8).toString('hex')}`).value(randomBytes(64 * 1024)).exec();
          acked++;
        } catch (err) {
          if (e.alive()) refused = String(err).slice(0, 120);
        }
        minFree = Math.min(minFree, free());
      }
      c.close();
    }));
    await sleep(1000);
    Object.assign(report, { acked, minFree, refused, aliveAfterFill: e.alive(), exit: e.alive() ? undefined : await e.exited, error: lastError(e.out) });
    if (e.alive()) {
      const del = ctl(e.url, ['del', '/fill/', '--prefix']);
      const rev = /"revision":(\d+)/.exec(ctl(e.url, ['get', 'x', '-w', 'json']).stdout)?.[1] ?? '0';
      const steps = [del, ctl(e.url, ['compaction', rev, '--physical']), ctl(e.url, ['defrag']), ctl(e.url, ['alarm', 'disarm'])];
      const put = ctl(e.url, ['put', '/after', 'x']);
      Object.assign(report, { recovery: steps.map((s) => s.status).join(','), putAfter: put.status === 0 ? 'ok' : put.stderr.trim().slice(0, 100), freeAfter: free(), aliveAfterRecovery: e.alive() });
    }
  }
  e.proc.kill('SIGKILL');
  await e.exited;
  // Restart on the disk filled to the last byte.
  const filler = join(mnt, 'filler');
  spawnSync('fallocate', ['-l', String(Math.floor(free() / 4096) * 4096), filler]);
  const again = start(dataDir, client, peer);
  const code = await Promise.race([again.exited, sleep(10_000).then(() => 'running')]);
  Object.assign(report, { fullStart: code, fullStartError: lastError(again.out) });
  again.proc.kill('SIGKILL');
  await again.exited;
  rmSync(filler, { force: true });
  rmSync(dataDir, { recursive: true, force: true });
  console.log(JSON.stringify(report));
}
spawnSync('umount', [mnt]);
rmSync(mnt, { recursive: true, force: true });
process.exit(0);
