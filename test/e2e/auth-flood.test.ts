/**
 * Issue 20, item 6, measured: 50 parallel wrong-password Authenticate calls, each caller sending its next as
 * soon as the last is answered, for 12 s against the leader of a 3-member cluster, cause no election and leave
 * concurrent puts' p99 under 2x its quiet value. Passwords are checked with bcrypt at its real cost (10), off
 * the event loop, at most two at once, with a backoff per source (src/node/access/password-checks.ts; all 50
 * callers share 127.0.0.1). A refusal costs no bcrypt; answered at once, these callers made 14,000-57,000
 * calls in 12 s and the put p99 went from 28-47 ms to 91-119 ms: refusals are answered when the backoff ends.
 *
 * The machine is shared and noisy (CI has 2 cores for three members, the flood and the test), so the p99s are
 * taken over the same number of sequential puts right before, during and after the flood (the quiet baseline
 * is the larger of the two quiet ones), the flood runs in its own process, and a failed comparison is measured
 * once more before the test fails. The numbers are printed for the README.
 */
import * as grpc from '@grpc/grpc-js';
import { describe, expect, it } from 'vitest';
import { Etcd3 } from 'etcd3';
import type { Wire } from '../../src/api/grpc/proto.js';
import { floodProcess } from './flood-process.js';
import { startServer, waitForVoters, type ServerProcess } from './harness.js';
import { releaseAfterAll } from './release-after-all.js';
import { rawService, type RawService } from './raw-grpc.js';

const { raws, clients, dirs } = releaseAfterAll();

const parallelCalls = 50;
/** Puts per phase: p99 is the 10th slowest, so one stall does not decide it. */
const putsPerPhase = 1000;
/** The flood's length: longer than the puts take under it (about 1000 x 5 ms). */
const floodMs = 12_000;
const authFailed = 'etcdserver: authentication failed, invalid user ID or password';
const tooManyRequests = 'etcdserver: too many requests';

interface Measurement {
  before: Phase;
  flooded: Phase;
  after: Phase;
  quietP99Ms: number;
  calls: number;
  answers: Record<string, number>;
}

interface Phase {
  p50Ms: number;
  p99Ms: number;
  maxMs: number;
}

function phase(latencies: number[]): Phase {
  const sorted = [...latencies].sort((x, y) => x - y);
  const at = (q: number): number => Number(sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))]!.toFixed(2));
  return { p50Ms: at(0.5), p99Ms: at(0.99), maxMs: at(1) };
}

async function putLatencies(kv: RawService, token: string, n: number, prefix: string): Promise<number[]> {
  const out: number[] = [];
  for (let i = 0; i < n; i++) {
    const t = performance.now();
    await kv.Put!({ key: Buffer.from(`${prefix}/${i % 50}`), value: Buffer.from(String(i)) }, token);
    out.push(performance.now() - t);
  }
  return out;
}

/** The flood, from its own process so that it does not slow the test's own loop. */
function flood(port: number, ms: number): ReturnType<typeof floodProcess> {
  return floodProcess('auth-flood-caller.mjs', [port, ms, parallelCalls]);
}

/** Each member's view: itself, its leader, its term. */
async function statuses(members: ServerProcess[]): Promise<{ member: string; leader: string; raftTerm: string }[]> {
  return Promise.all(members.map(async (m) => {
    const s = await rawService(m.clientPort, 'etcdserverpb.Maintenance', raws).Status!({});
    return { member: String((s.header as Wire).memberId), leader: String(s.leader), raftTerm: String(s.raftTerm) };
  }));
}

describe('wrong passwords in a flood', () => {
  it('50 parallel wrong-password Authenticate calls cause no election and leave put p99 under 2x quiet', async () => {
    const secret = 'auth-flood-token';
    const a = await startServer({ name: 'flood-a', args: ['--cluster-init', '--token', secret] });
    dirs.push(a.dataDir);
    const b = await startServer({ name: 'flood-b', args: ['--server', a.peerUrl, '--token', secret] });
    dirs.push(b.dataDir);
    const c = await startServer({ name: 'flood-c', args: ['--server', a.peerUrl, '--token', secret] });
    dirs.push(c.dataDir);
    const members = [a, b, c];
    const admin = new Etcd3({ hosts: a.clientUrl, dialTimeout: 2000 });
    clients.push(admin);
    await waitForVoters(admin, 3, { started: true, timeoutMs: 60_000 });
    await admin.user('root').create('rootpw'); // bcrypt cost 10, the default: what a flood makes us pay
    await admin.user('root').addRole('root');
    await admin.auth.authEnable({});

    const before = await statuses(members);
    // Flood and measure at the leader: a loop held there would stop its heartbeats.
    const target = members[before.findIndex((x) => x.member === x.leader)];
    expect(target).toBeDefined();
    const auth = rawService(target!.clientPort, 'etcdserverpb.Auth', raws);
    const kv = rawService(target!.clientPort, 'etcdserverpb.KV', raws);
    const token = (await auth.Authenticate!({ name: 'root', password: 'rootpw' })).token as string;
    await putLatencies(kv, token, 200, 'warm');

    // Quiet before and after the flood: the baseline is the larger p99, so that a burst of other work on the
    // machine during one quiet window does not pass for the flood's doing, nor the other way round.
    const measure = async (): Promise<Measurement> => {
      const before = phase(await putLatencies(kv, token, putsPerPhase, 'quiet'));
      const flooding = flood(target!.clientPort, floodMs);
      // The puts start once the flood runs (its process takes a moment to start) and end before it does.
      await flooding.started;
      const flooded = phase(await putLatencies(kv, token, putsPerPhase, 'flood'));
      const { calls, answers } = await flooding.done;
      const after = phase(await putLatencies(kv, token, putsPerPhase, 'quiet'));
      return { before, flooded, after, quietP99Ms: Math.max(before.p99Ms, after.p99Ms), calls, answers };
    };
    let m = await measure();
    console.log('auth flood, first measurement:', JSON.stringify(m));
    if (m.flooded.p99Ms >= 2 * m.quietP99Ms) {
      m = await measure();
      console.log('auth flood, second measurement:', JSON.stringify(m));
    }

    // The flood was real: every caller was refused many times, with etcd's answers: a wrong password when
    // its guess was checked, "too many requests" when its address already had its queue of checks full
    // (issue 31: guesses are slowed per address, and a refusal unchecked no longer says the password is wrong).
    expect(Object.keys(m.answers).sort()).toEqual([authFailed, tooManyRequests]);
    expect(m.calls).toBeGreaterThan(parallelCalls * 2);
    // No election: every member still follows the same leader in the same term.
    expect(await statuses(members)).toEqual(before);
    expect(m.flooded.p99Ms).toBeLessThan(2 * m.quietP99Ms);
  }, 240_000);
});

