/**
 * A kube-apiserver-shaped load for end-to-end tests on any etcd v3 endpoints (ours or etcd's): writers put
 * new keys under /registry/ (each key once, so an acknowledged write can be checked for afterwards) and read
 * back a recent one linearizably, a prefix watch sees every put, and a lease is kept alive with a key
 * attached (kube's events and leader-election leases). One etcd3 client holds every endpoint, as
 * kube-apiserver's --etcd-servers does, and retries on another member what a stopping one refused.
 */
import { Etcd3, type Lease } from 'etcd3';

export interface KubeLoadOptions {
  hosts: string[];
  writers: number;
  /** Pause between one writer's requests. */
  pauseMs: number;
  leaseTtlSeconds: number;
}

/**
 * A writer whose request failed waits this long before its next one, as a real client backs off: without it,
 * a client whose every endpoint is refusing (the etcd3 client's circuit breakers open for 5 s) would count
 * thousands of instant failures a second, and failure counts would measure the loop's speed, not the server.
 */
export const failureBackoffMs = 100;

export interface KubeLoadReport {
  /** key → value, for every put that was acknowledged. */
  acked: Map<string, string>;
  requests: number;
  /** Requests that failed after the client's own retries, with their messages. */
  failures: string[];
  /** Keys the prefix watch delivered. */
  watched: Set<string>;
  leaseLost: number;
  leaseKey: string;
  /** Set by the caller: how long the load ran. */
  seconds: number;
}

export interface KubeLoad {
  /** Stops the writers, waits for the watch to deliver every acknowledged put (up to `settleMs`), reports. */
  stop(settleMs?: number): Promise<KubeLoadReport>;
  client: Etcd3;
}

export async function startKubeLoad(o: KubeLoadOptions): Promise<KubeLoad> {
  const client = new Etcd3({ hosts: o.hosts, dialTimeout: 2000 });
  const report: KubeLoadReport = { acked: new Map(), requests: 0, failures: [], watched: new Set(), leaseLost: 0, leaseKey: '/registry/leases/kube-scheduler', seconds: 0 };
  const watcher = await client.watch().prefix('/registry/').create();
  watcher.on('put', (kv) => report.watched.add(kv.key.toString()));
  watcher.on('error', () => undefined);
  const lease: Lease = client.lease(o.leaseTtlSeconds);
  lease.on('lost', () => (report.leaseLost += 1));
  lease.on('keepaliveFailed', () => undefined);
  await lease.put(report.leaseKey).value('holder');
  report.acked.set(report.leaseKey, 'holder');

  let running = true;
  const writer = async (w: number): Promise<void> => {
    for (let n = 0; running; n++) {
      const key = `/registry/pods/w${w}-${n}`;
      const value = `v${n}`;
      report.requests += 1;
      try {
        await client.put(key).value(value);
        report.acked.set(key, value);
      } catch (error) {
        report.failures.push(`put ${key}: ${String(error)}`);
        await new Promise((r) => setTimeout(r, failureBackoffMs));
      }
      if (n % 4 === 3) {
        const recent = `/registry/pods/w${w}-${n - 1}`;
        report.requests += 1;
        try {
          const got = await client.get(recent).string();
          if (report.acked.has(recent) && got !== report.acked.get(recent)) report.failures.push(`get ${recent}: ${got} after an acknowledged put`);
        } catch (error) {
          report.failures.push(`get ${recent}: ${String(error)}`);
          await new Promise((r) => setTimeout(r, failureBackoffMs));
        }
      }
      await new Promise((r) => setTimeout(r, o.pauseMs));
    }
  };
  const writers = Array.from({ length: o.writers }, (_, w) => writer(w));

  return {
    client,
    stop: async (settleMs = 10_000) => {
      running = false;
      await Promise.all(writers);
      const deadline = Date.now() + settleMs;
      while (Date.now() < deadline && [...report.acked.keys()].some((k) => !report.watched.has(k))) await new Promise((r) => setTimeout(r, 100));
      await watcher.cancel().catch(() => undefined);
      return report;
    },
  };
}

/** Keys acknowledged but not found with their value in `present` (one member's range of /registry/). */
export function lostWrites(acked: Map<string, string>, present: Record<string, string>): string[] {
  return [...acked].filter(([key, value]) => present[key] !== value).map(([key]) => key);
}
