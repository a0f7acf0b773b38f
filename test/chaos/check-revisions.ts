/**
 * L5: header revisions never decrease per client (and per watch stream), and a response's revision is ≥
 * every mod_revision in it. Plus the cross-key half of linearizability that per-key checking cannot see:
 * the store revision is one register, so an operation that starts after another completed must report a
 * revision ≥ the other's (a stale read served without ReadIndex fails here even on a key nobody wrote), and
 * two acknowledged writes never share a revision.
 */
import type { History, Op, OpOutput } from './history.js';
import { describeOp } from './check-l1.js';

/** Header revisions of a completed op, in the order the client saw them. */
function revsOf(out: OpOutput): number[] {
  switch (out.type) {
    case 'list': return out.pageRevs;
    case 'error': return [];
    default: return [out.rev];
  }
}

function modRevsOf(out: OpOutput): number[] {
  if (out.type === 'get') return out.kv ? [out.kv.modRev] : [];
  if (out.type === 'txn') return out.kv ? [out.kv.modRev] : [];
  if (out.type === 'list') return out.kvs.map((kv) => kv.modRev);
  return [];
}

function completed(op: Op): op is Op & { output: OpOutput; ret: number } {
  return op.ret !== undefined && op.output !== undefined && op.output.type !== 'error';
}

function perClient(ops: Op[], out: string[]): void {
  const last = new Map<number, Op>();
  for (const op of [...ops].sort((a, b) => a.call - b.call)) {
    const revs = revsOf(op.output!);
    for (let i = 1; i < revs.length; i++) if (revs[i]! < revs[i - 1]!) out.push(`L5 pages of ${describeOp(op)} go back in revision`);
    const prev = last.get(op.client);
    if (prev !== undefined && revs.length > 0 && Math.min(...revs) < Math.max(...revsOf(prev.output!))) {
      out.push(`L5 client ${op.client}'s header revision went back: ${describeOp(prev)} then ${describeOp(op)}`);
    }
    if (revs.length > 0) last.set(op.client, op);
    const top = op.output!.type === 'list' ? revs[0]! : Math.max(...revs, 0);
    for (const m of modRevsOf(op.output!)) if (m > top) out.push(`L5 mod_revision ${m} above the response revision ${top} in ${describeOp(op)}`);
  }
}

function realTime(ops: Op[], out: string[]): void {
  const byRet = [...ops].sort((a, b) => a.ret! - b.ret!);
  const byCall = [...ops].sort((a, b) => a.call - b.call);
  let i = 0;
  let best: Op | undefined;
  for (const op of byCall) {
    for (; i < byRet.length && byRet[i]!.ret! < op.call; i++) {
      const r = byRet[i]!;
      if (best === undefined || Math.max(...revsOf(r.output!)) > Math.max(...revsOf(best.output!))) best = r;
    }
    const revs = revsOf(op.output!);
    if (best !== undefined && revs.length > 0 && revs[0]! < Math.max(...revsOf(best.output!))) {
      out.push(`L1 stale revision: ${describeOp(op)} started after ${describeOp(best)} completed`);
    }
  }
}

function uniqueWrites(ops: Op[], out: string[]): void {
  const seen = new Map<number, Op>();
  for (const op of ops) {
    const o = op.output!;
    const rev = o.type === 'txn' && o.succeeded ? o.rev : o.type === 'put' ? o.rev : undefined;
    if (rev === undefined) continue;
    const other = seen.get(rev);
    if (other !== undefined) out.push(`L1 two acknowledged writes at revision ${rev}: ${describeOp(other)} and ${describeOp(op)}`);
    seen.set(rev, op);
  }
}

export function checkRevisions(h: History): string[] {
  const out: string[] = [];
  const ops = h.ops.filter(completed);
  perClient(ops, out);
  realTime(ops, out);
  uniqueWrites(ops, out);
  for (const s of h.watches) {
    let prev = 0;
    for (const r of s.responses) {
      if (r.headerRev < prev) out.push(`L5 watch ${s.id}: header revision ${r.headerRev} after ${prev}`);
      prev = Math.max(prev, r.headerRev);
      for (const e of r.events) if (e.kv.modRev > r.headerRev) out.push(`L5 watch ${s.id}: event at ${e.kv.modRev} in a response at ${r.headerRev}`);
    }
  }
  return out;
}
