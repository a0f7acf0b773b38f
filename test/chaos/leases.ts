/**
 * Leases kept alive under faults (C9, W8: a paused old leader or a slow disk must not revoke a lease that
 * was renewed). One keeper grants a lease, attaches a key, and renews it over a LeaseKeepAlive stream twice
 * per TTL, recording each acknowledged renewal with the time its request was SENT: the leader renewed no
 * earlier than that, so the lease cannot expire before sentMs + TTL. The check: no delete event for the key
 * arrives at any watcher before that instant. When renewals fail (the member is down), the keeper lets the
 * lease go and starts a new one, so expiry after a real gap is not a violation.
 */
import type { Etcd3, ILeaseKeepAliveResponse } from 'etcd3';
import type { History, KeptLease, Recorder } from './history.js';
import { sleep } from './watchers.js';
import { bytes, deadline } from './wire.js';

export const leasePrefix = '/registry/leases/';

interface Stream {
  write(req: unknown): void;
  on(event: string, fn: (arg: never) => void): void;
  end(): void;
  cancel?(): void;
}

export async function leaseKeeper(o: { rec: Recorder; members: () => Etcd3[]; ttlSeconds: number; stopped: () => boolean; log: (l: string) => void }): Promise<void> {
  for (let n = 0; !o.stopped(); n++) {
    const members = o.members();
    const etcd = members[n % Math.max(1, members.length)];
    if (etcd === undefined) return;
    try {
      await keepOne(o, etcd, n);
    } catch (e) {
      o.log(`lease keeper: ${String(e).slice(0, 200)}`);
    }
    await sleep(200);
  }
}

async function keepOne(o: { rec: Recorder; ttlSeconds: number; stopped: () => boolean }, etcd: Etcd3, n: number): Promise<void> {
  const sentMs = Date.now();
  const grant = await etcd.leaseClient.leaseGrant({ TTL: o.ttlSeconds }, deadline(2000));
  const lease: KeptLease = { id: String(grant.ID), key: `${leasePrefix}holder-${n}`, ttlSeconds: o.ttlSeconds, renewals: [{ sentMs, ttlSeconds: Number(grant.TTL) }] };
  await etcd.kv.put({ key: bytes(lease.key), value: bytes(`lease-${n}`), lease: lease.id }, deadline(2000));
  o.rec.leases.push(lease);
  const stream = (await etcd.leaseClient.leaseKeepAlive()) as unknown as Stream;
  const pending: number[] = [];
  let broken = false;
  stream.on('data', (r: ILeaseKeepAliveResponse) => {
    const sent = pending.shift();
    if (sent !== undefined && Number(r.TTL) > 0) lease.renewals.push({ sentMs: sent, ttlSeconds: Number(r.TTL) });
  });
  stream.on('error', () => (broken = true));
  stream.on('end', () => (broken = true));
  try {
    // Renew twice per TTL; give up this lease once renewals stop coming back for a whole TTL.
    while (!o.stopped() && !broken) {
      pending.push(Date.now());
      stream.write({ ID: lease.id });
      await sleep((o.ttlSeconds * 1000) / 4);
      const last = lease.renewals[lease.renewals.length - 1]!.sentMs;
      if (Date.now() - last > o.ttlSeconds * 1000) break;
    }
  } finally {
    stream.cancel?.();
  }
}

/** No kept lease's key is deleted before its last acknowledged renewal could have run out. */
export function checkLeases(h: History): string[] {
  const out: string[] = [];
  const deletes = new Map<string, number>();
  for (const s of h.watches) {
    for (const r of s.responses) {
      for (const e of r.events) {
        if (e.type !== 'delete' || r.atMs === undefined) continue;
        deletes.set(e.kv.key, Math.min(deletes.get(e.kv.key) ?? Infinity, r.atMs));
      }
    }
  }
  for (const l of h.leases ?? []) {
    const at = deletes.get(l.key);
    if (at === undefined) continue;
    for (const r of l.renewals) {
      const until = r.sentMs + r.ttlSeconds * 1000;
      if (r.sentMs <= at && until > at) {
        out.push(`lease ${l.id} (${l.key}) revoked ${until - at} ms early: renewed for ${r.ttlSeconds} s by a request sent at ${r.sentMs}, delete seen at ${at}`);
        break;
      }
    }
  }
  return out;
}
