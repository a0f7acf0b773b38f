/**
 * The witness's own checks in the production-node simulator (witness seeds of run-node-seed.ts), after the
 * liveness phase: it holds no data (never handed a snapshot with data to save; the network fails the seed at
 * once if a leader streams it snapshot data), it follows the leader (same term, knows it, is not leading),
 * and it keeps the log's metadata: it acknowledged the leader's appends, so its log reaches the leader's
 * commit (with a data member down it is part of every quorum). The data checks (workload, liveness, HashKV)
 * skip it: it holds no key space.
 */
import type { ServerCluster } from './server-cluster.js';

/** Violations of the witness's guarantees; `commit` is the leader's commit index after the final write. */
export function checkWitnesses(c: ServerCluster, commit: number): string[] {
  const out: string[] = [];
  const leader = c.leader();
  if (leader === undefined) return ['witness: no leader to compare the witness with'];
  const lead = leader.driver!.status();
  for (const w of c.witnesses) {
    if (w.snapshotsWithData > 0) out.push(`witness n${w.id}: its log was asked to save ${w.snapshotsWithData} snapshot(s) with data`);
    const driver = w.driver;
    if (driver === undefined) {
      out.push(`witness n${w.id}: not running after the liveness phase`);
      continue;
    }
    const s = driver.status();
    if (s.role === 'leader') out.push(`witness n${w.id}: still leads (term ${s.term}) once a data leader serves`);
    if (s.term !== lead.term) out.push(`witness n${w.id}: at term ${s.term}, the leader n${leader.id} at ${lead.term}`);
    if (s.leader !== leader.id) out.push(`witness n${w.id}: knows leader n${s.leader}, not n${leader.id}`);
    if (s.lastIndex < commit) out.push(`witness n${w.id}: its log ends at ${s.lastIndex}, before the leader's commit ${commit}`);
    if (!s.confState.witnesses?.includes(w.id)) out.push(`witness n${w.id}: not a witness in its own configuration`);
  }
  return out;
}
