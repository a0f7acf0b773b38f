/** What a member serves on HTTP/1.1 besides gRPC (etcd's /health, /version, /metrics) and its gauges. */
import type { EtcdServer } from '../node/etcd-server.js';
import { createMetricsHandler, createVersionHandler, healthCheckTimeoutMs, type HealthResult, type MetricsRequestHandler } from '../metrics/metrics-http.js';
import { etcdVersion } from '../node/maintenance/maintenance-ops.js';
import type { ServerMetrics } from '../metrics/server-metrics.js';

/**
 * What the client port serves on HTTP/1.1 besides the JSON gateway, as etcd: /health, /version, /metrics;
 * and ours: the `extra` routes (/status).
 */
export function clientPortHttp(server: EtcdServer, metrics: ServerMetrics, extra: MetricsRequestHandler[] = []): MetricsRequestHandler {
  const routes = [createMetricsHandler({ registry: metrics.registry, health: () => countedHealth(server, metrics) }), createVersionHandler(etcdVersion), ...extra];
  return (req, res) => routes.some((route) => route(req, res));
}

export const learnerHealthReason = 'LEARNER: not promoted yet; it serves serializable reads only (etcdserver: rpc not supported for learner)';

/**
 * etcd's /health: healthy when there is a leader, this member votes, no alarm is raised, and a linearizable read succeeds
 * (the read proves the member can reach a quorum now, not just that it saw a leader once).
 */
export async function health(server: EtcdServer): Promise<HealthResult> {
  if (!server.hasLeader()) return { health: false, reason: 'RAFT NO LEADER' };
  // A learner refuses every request but serializable reads (etcd's `rpc not supported for learner`), as
  // `etcdctl endpoint health` finds; a load balancer that trusted /health sent it writes (issue 32, item 4).
  if (server.isLearner()) return { health: false, reason: learnerHealthReason };
  const alarms = server.state.alarms.list();
  if (alarms.length > 0) return { health: false, reason: `ALARM ${alarms.map((a) => a.alarm).join(',')}` };
  try {
    await server.linearizableBarrier({ requireLeader: true, signal: AbortSignal.timeout(healthCheckTimeoutMs) });
  } catch (error) {
    return { health: false, reason: `QGET ERROR: ${error instanceof Error ? error.message : String(error)}` };
  }
  return { health: true, reason: '' };
}

/** /health, counted in etcd_server_health_success / _failures as etcd's /health handler counts. */
export async function countedHealth(server: EtcdServer, metrics: Pick<ServerMetrics, 'healthSuccess' | 'healthFailures'>): Promise<HealthResult> {
  const result = await health(server);
  (result.health ? metrics.healthSuccess : metrics.healthFailures).inc();
  return result;
}

export function collectServerMetrics(server: EtcdServer, m: ServerMetrics): void {
  m.hasLeader.set(server.hasLeader() ? 1 : 0);
  m.isLeader.set(server.isLeader ? 1 : 0);
  const status = server.driver.status();
  m.proposalsCommitted.set(status.commit);
  m.proposalsApplied.set(server.applied);
  m.proposalsPending.set(server.pendingProposals);
  m.dbTotalSize.set(server.state.store.dbSizeBytes());
  const p = server.authApi.passwordCounts();
  m.passwordChecks.setTotal(p.verified, { answer: 'bcrypt' });
  m.passwordChecks.setTotal(p.known, { answer: 'known' });
  m.passwordChecks.setTotal(p.refused, { answer: 'refused' });
  m.passwordHashes.setTotal(p.hashed);
}
