/**
 * How the KV store tells the lessor which keys a lease holds, without importing it (the lessor depends on
 * the store, not the other way round). Called synchronously during apply, in etcd's order: on a put the
 * key is detached from its old lease (when it had one) and attached to the new one (when ≠ 0); on a delete
 * it is detached. At open (or when hooks are installed) every live key with a lease is attached once.
 * Revoking a lease is the lessor's job: it calls `store.txn` with one deleteRange op per attached key, so
 * all of them go in one revision.
 */
export interface LeaseHooks {
  /** Does the lease exist (granted and not revoked)? A put naming a missing lease fails with leaseNotFound. */
  exists(id: bigint): boolean;
  attach(id: bigint, key: Uint8Array): void;
  detach(id: bigint, key: Uint8Array): void;
}
