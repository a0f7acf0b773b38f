/**
 * The faults, one per run, injected while the workload runs. Each returns once the cluster is whole again
 * (restarted, healed, resumed, re-added), so the run can then check convergence. Durations scale with the
 * election timeout.
 */
import { spawn } from 'node:child_process';
import { existsSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Prng } from '../../src/base/index.js';
import type { Cluster, MemberSpec } from './cluster.js';
import type { LinkMode } from './proxy.js';
import { sleep } from './watchers.js';
import { deadline } from './wire.js';

export interface FaultContext {
  cluster: Cluster;
  rng: Prng;
  log: (l: string) => void;
  /** Notes for the report (e.g. how an early promotion was answered). */
  notes: string[];
}

export interface Fault {
  name: string;
  describe: string;
  inject(ctx: FaultContext): Promise<void>;
}

async function followers(c: Cluster): Promise<{ leader: MemberSpec; followers: MemberSpec[] }> {
  const leader = await c.leader();
  return { leader, followers: c.alive().filter((m) => m !== leader) };
}

function pick<T>(rng: Prng, xs: T[]): T {
  return xs[rng.int(xs.length)]!;
}

async function killRestart(ctx: FaultContext, victims: MemberSpec[], downMs: number): Promise<void> {
  for (const v of victims) await ctx.cluster.kill(v);
  await sleep(downMs);
  await Promise.all(victims.map((v) => ctx.cluster.restart(v)));
}

function linkRule(ctx: FaultContext, mode: LinkMode, only?: MemberSpec): void {
  const id = only?.id;
  ctx.cluster.rule = (from, to) => (only === undefined || from === id || to === id ? mode : { kind: 'pass' });
  ctx.cluster.refreshLinks();
}

function heal(ctx: FaultContext): void {
  ctx.log(`fault: heal links; proxies ${ctx.cluster.members.map((m) => `${m.name}:${JSON.stringify(m.proxy.stats)}`).join(' ')}`);
  ctx.cluster.rule = () => ({ kind: 'pass' });
  ctx.cluster.refreshLinks();
}

export const faults: Fault[] = [
  {
    name: 'C1-kill-follower', describe: 'SIGKILL a follower, restart it after 2 election timeouts',
    inject: async (ctx) => killRestart(ctx, [pick(ctx.rng, (await followers(ctx.cluster)).followers)], 2 * ctx.cluster.electionMs),
  },
  {
    name: 'C2-kill-leader', describe: 'SIGKILL the leader, restart it after 2 election timeouts',
    inject: async (ctx) => killRestart(ctx, [await ctx.cluster.leader()], 2 * ctx.cluster.electionMs),
  },
  {
    name: 'C2-kill-leader-3x', describe: 'SIGKILL the leader three times, one election timeout apart, restarting each',
    inject: async (ctx) => {
      for (let i = 0; i < 3; i++) {
        await killRestart(ctx, [await ctx.cluster.leader()], ctx.cluster.electionMs);
        await sleep(ctx.cluster.electionMs);
      }
    },
  },
  {
    name: 'C3-snapshot-catchup', describe: 'SIGKILL a follower for 6 s of traffic (past --snapshot-count), so it catches up by snapshot',
    inject: async (ctx) => {
      const v = pick(ctx.rng, (await followers(ctx.cluster)).followers);
      await killRestart(ctx, [v], 6000);
      await sleep(2000);
      const restored = v.proc!.output.some((l) => l.includes('restoring from snapshot'));
      ctx.log(`fault: ${v.name} ${restored ? 'caught up by snapshot' : 'caught up from the log'}`);
      if (!restored) ctx.notes.push(`${v.name} caught up without a snapshot`);
    },
  },
  {
    name: 'C2-kill-quorum', describe: 'SIGKILL the leader and a follower, restart both after 2 election timeouts',
    inject: async (ctx) => {
      const { leader, followers: f } = await followers(ctx.cluster);
      await killRestart(ctx, [leader, pick(ctx.rng, f)], 2 * ctx.cluster.electionMs);
    },
  },
  {
    name: 'C2-kill-all', describe: 'SIGKILL every member at once, restart them all after 2 election timeouts',
    inject: async (ctx) => killRestart(ctx, ctx.cluster.alive(), 2 * ctx.cluster.electionMs),
  },
  {
    name: 'C4-blackhole', describe: 'blackhole one member\'s peer traffic (both ways) for 3 election timeouts, then heal',
    inject: async (ctx) => {
      const v = ctx.rng.next() < 0.5 ? await ctx.cluster.leader() : pick(ctx.rng, ctx.cluster.alive());
      ctx.log(`fault: blackhole ${v.name}`);
      linkRule(ctx, { kind: 'blackhole' }, v);
      await sleep(3 * ctx.cluster.electionMs);
      heal(ctx);
    },
  },
  {
    name: 'C5-blackhole-snapshot', describe: 'blackhole a follower (watchers may sit on it) for 8 s of traffic, past --snapshot-count, then heal',
    inject: async (ctx) => {
      const v = pick(ctx.rng, (await followers(ctx.cluster)).followers);
      ctx.log(`fault: blackhole ${v.name}`);
      linkRule(ctx, { kind: 'blackhole' }, v);
      await sleep(8000);
      heal(ctx);
      await sleep(3000);
      ctx.log(`fault: ${v.name} ${v.proc!.output.some((l) => l.includes('restoring from snapshot')) ? 'caught up by snapshot' : 'caught up from the log'}`);
    },
  },
  {
    name: 'C6-delay', describe: 'delay every peer link 75±50 ms for 5 s',
    inject: async (ctx) => {
      ctx.log('fault: delay peer links 75±50 ms');
      linkRule(ctx, { kind: 'delay', meanMs: 75, jitterMs: 50 });
      await sleep(5000);
      heal(ctx);
    },
  },
  {
    name: 'C7-loss', describe: '50% loss (connection reset per chunk) on every peer link for 5 s',
    inject: async (ctx) => {
      ctx.log('fault: 50% loss on peer links');
      linkRule(ctx, { kind: 'loss', p: 0.5 });
      await sleep(5000);
      heal(ctx);
    },
  },
  {
    name: 'C9-pause-leader', describe: 'SIGSTOP the leader for 1–3 election timeouts, then SIGCONT',
    inject: async (ctx) => {
      const l = await ctx.cluster.leader();
      ctx.cluster.signal(l, 'SIGSTOP');
      await sleep((1 + 2 * ctx.rng.next()) * ctx.cluster.electionMs);
      ctx.cluster.signal(l, 'SIGCONT');
    },
  },
  { name: 'C11-replace-member', describe: 'remove a member, wipe it, re-add it as a fresh member', inject: replaceMember },
  { name: 'C12-learner', describe: 'add a learner under load, promote it early (refusal expected), wait for promotion', inject: addLearner },
  {
    name: 'C14-slow-fsync', describe: 'delay one member\'s fsync/fdatasync by 200 ms (strace inject) for 6 s',
    inject: async (ctx) => {
      const v = ctx.rng.next() < 0.5 ? await ctx.cluster.leader() : pick(ctx.rng, ctx.cluster.alive());
      ctx.log(`fault: slow fsync on ${v.name}`);
      const lines = await straceFsync(v, 'delay_exit=200000', 6000);
      const syncs = lines.filter((l) => /f(data)?sync\(/.test(l)).length;
      ctx.log(`fault: ${syncs} fsync calls on ${v.name} delayed by 200 ms`);
      if (syncs === 0) ctx.notes.push(`strace delayed no fsync on ${v.name}`);
    },
  },
  {
    name: 'C14-failing-fsync', describe: 'fsync/fdatasync fail with EIO on one member: it must exit (never ack); restart it',
    inject: async (ctx) => {
      const v = ctx.rng.next() < 0.5 ? await ctx.cluster.leader() : pick(ctx.rng, ctx.cluster.alive());
      ctx.log(`fault: failing fsync on ${v.name}`);
      const lines = await straceFsync(v, 'error=EIO', 6000);
      const failed = lines.filter((l) => /INJECTED/.test(l)).length;
      const exited = v.proc!.proc.exitCode !== null || v.proc!.proc.signalCode !== null;
      ctx.log(`fault: ${failed} fsync calls failed on ${v.name}; it ${exited ? `exited (${v.proc!.proc.exitCode ?? v.proc!.proc.signalCode})` : 'is still running'}`);
      if (failed > 0 && !exited) throw new Error(`W7: ${v.name} kept running for 6 s after ${failed} failed fsync calls`);
      if (failed === 0) ctx.notes.push(`strace failed no fsync on ${v.name}`);
      if (!exited) await ctx.cluster.kill(v);
      await ctx.cluster.restart(v);
    },
  },
];

/** Run the member's fsync and fdatasync calls under strace's `inject` for `ms` (or until it exits); the trace lines. */
async function straceFsync(v: MemberSpec, inject: string, ms: number): Promise<string[]> {
  const out = join(tmpdir(), `etcetera-chaos-strace-${process.pid}-${Date.now()}.txt`);
  const args = ['-f', '-p', String(v.proc!.proc.pid), '-e', 'trace=fdatasync,fsync', '-e', `inject=fdatasync,fsync:${inject}`, '-o', out];
  const strace = spawn('strace', args, { stdio: 'ignore' });
  const ended = new Promise((r) => strace.once('exit', r));
  await Promise.race([sleep(ms), v.proc!.exited]);
  strace.kill('SIGINT'); // detaches cleanly; SIGKILL would leave the member stopped under a dead tracer
  await Promise.race([ended, sleep(5000)]);
  const lines = existsSync(out) ? readFileSync(out, 'utf8').split('\n') : [];
  rmSync(out, { force: true });
  return lines;
}

async function replaceMember(ctx: FaultContext): Promise<void> {
  const c = ctx.cluster;
  const v = pick(ctx.rng, c.alive());
  const other = c.alive().find((m) => m !== v)!;
  ctx.log(`fault: remove ${v.name} (${v.id})`);
  await c.admin(other).cluster.memberRemove({ ID: v.id! }, deadline(10_000));
  const stopped = await Promise.race([v.proc!.exited.then(() => true), sleep(15_000).then(() => false)]);
  if (!stopped) {
    ctx.notes.push(`${v.name} did not stop by itself within 15 s of its removal`);
    await c.kill(v);
  }
  c.wipe(v);
  ctx.log(`fault: re-add ${v.name} as a fresh member`);
  await c.launch(v);
  await c.waitVoters(c.members.length, 60_000);
}

async function addLearner(ctx: FaultContext): Promise<void> {
  const c = ctx.cluster;
  const n = c.members.length;
  const m = await c.addSpec(String.fromCharCode(97 + n));
  ctx.log(`fault: add learner ${m.name}`);
  await c.launch(m);
  const leader = await c.leader();
  const list = await c.admin(leader).cluster.memberList({ linearizable: true } as never, deadline(5000));
  const me = list.members.find((x) => x.name === m.name || x.peerURLs.some((u) => u.endsWith(`:${m.proxyPort}`)));
  if (me === undefined) {
    ctx.notes.push(`learner ${m.name} not in the member list once ready`);
  } else if (me.isLearner) {
    try {
      await c.admin(leader).cluster.memberPromote({ ID: me.ID }, deadline(5000));
      ctx.notes.push('early promote accepted');
    } catch (e) {
      const msg = String(e);
      ctx.notes.push(`early promote: ${msg.slice(0, 160)}`);
      if (!/can only promote a learner member which is in sync with leader|not a learner|learner/.test(msg)) throw new Error(`unexpected early-promote error: ${msg}`);
    }
  } else ctx.notes.push('learner already promoted before the early promote');
  await c.waitVoters(n + 1, 60_000);
}
