/** Human-readable one-liners for traces and failure reports. */
import type { Message } from '../../src/raft/types.js';
import type { Cluster } from './cluster.js';

export function describeMessage(m: Message): string {
  const ents = m.entries.length > 0 ? ` ents ${m.entries[0]!.index}..${m.entries[m.entries.length - 1]!.index}` : '';
  const rej = m.reject ? ` REJECT hint ${m.rejectHint}/${m.logTermHint ?? '-'}` : '';
  const snap = m.snapshot !== undefined ? ` snap@${m.snapshot.meta.index}` : '';
  return `  ${m.from}→${m.to} ${m.type} t${m.term} i${m.index} lt${m.logTerm} c${m.commit}${ents}${rej}${snap}`;
}

/** One line per node (and the leader's view of its followers), for failure reports. */
export function describeCluster(c: Cluster): string {
  const lines: string[] = [];
  for (const n of c.nodes.values()) {
    if (!n.up) {
      lines.push(`n${n.id} down${n.removed ? ' (removed)' : ''}`);
      continue;
    }
    const st = n.raw!.status();
    const cs = `v[${st.confState.voters.join(',')}] l[${st.confState.learners.join(',')}]`;
    lines.push(
      `n${n.id} ${st.role} term ${st.term} lead ${st.leader} commit ${st.commit} applied ${st.applied}/${n.sm.appliedIndex} last ${st.lastIndex} durable ${n.disk.durable.log.lastIndex()} pending ${n.disk.pendingCount} ${cs}`,
    );
    for (const [id, p] of st.progress ?? []) lines.push(`   → n${id} ${p.state} match ${p.match} next ${p.next} inflight ${p.inflight} active ${p.recentActive}`);
  }
  return lines.join('\n');
}
