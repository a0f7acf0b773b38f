/**
 * What the two servers cannot share, taken out of an answer before the comparison: cluster and member ids and
 * raft terms in headers (two different clusters), lease ids granted without an id (random on each side: named
 * by the grant's handle), tokens, and the member id where an answer names the server itself. Everything else
 * is compared as it came, field by field, header revisions included.
 */
export interface SideNames {
  memberId: string;
  /** lease id (decimal string) → the handle it was granted under */
  leaseHandles: Map<string, string>;
}

const headerIds = new Set(['clusterId', 'cluster_id', 'memberId', 'member_id', 'raftTerm', 'raft_term']);
const leaseFields = new Set(['ID', 'lease', 'leaseId']);
const memberFields = new Set(['leader', 'memberID', 'memberId', 'member_id', 'ID']);

export function normalise(v: unknown, names: SideNames, field = ''): unknown {
  if (Array.isArray(v)) return v.map((x) => normalise(x, names, field));
  if (v !== null && typeof v === 'object') {
    const out: Record<string, unknown> = {};
    for (const [k, x] of Object.entries(v)) {
      if (field === 'header' && headerIds.has(k)) continue;
      if (k === 'token') out[k] = '<token>';
      // Each side's own listen URLs and name (MemberList, MemberAdd): only how many there are is compared.
      else if ((k === 'peerURLs' || k === 'clientURLs') && Array.isArray(x)) out[k] = x.length;
      else if (k === 'name' && field === 'members') out[k] = '<name>';
      else out[k] = normalise(x, names, k);
    }
    return out;
  }
  if (typeof v === 'string' || typeof v === 'number') {
    const s = String(v);
    if (leaseFields.has(field) && names.leaseHandles.has(s)) return `lease:${names.leaseHandles.get(s)}`;
    if (memberFields.has(field) && s === names.memberId) return 'member:self';
  }
  return v;
}
