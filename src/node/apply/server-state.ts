/**
 * The replicated state of one member, loaded from its backend: the MVCC store, leases, alarms and the member
 * list, users and roles, plus the applier over them. Rebuilt as a whole when a Raft snapshot replaces the backend contents.
 */
import type { Backend } from '../../mvcc/backend.js';
import { KvStore, type SnapshotSource } from '../../mvcc/kv-store.js';
import { Lessor } from '../../mvcc/lessor.js';
import { AlarmStore } from '../../mvcc/alarms.js';
import { AuthStore } from '../../auth/auth-store.js';
import { Applier } from './apply.js';
import { Membership } from '../membership/membership.js';

export interface StateOptions {
  quotaBackendBytes: number;
  minLeaseTtlSeconds: number;
}

export class ServerState {
  private constructor(
    readonly store: KvStore,
    readonly lessor: Lessor,
    readonly alarms: AlarmStore,
    readonly membership: Membership,
    readonly auth: AuthStore,
    readonly applier: Applier,
  ) {}

  /** `indexCheckpoint`: the key index saved at the last clean stop, used when it matches the backend. */
  static async load(backend: Backend, options: StateOptions, indexCheckpoint?: AsyncIterable<Uint8Array>): Promise<ServerState> {
    const store = await KvStore.open(backend, { quotaBackendBytes: options.quotaBackendBytes, indexCheckpoint });
    return ServerState.#assemble(backend, store, options);
  }

  /** Replace the backend's contents with a Raft snapshot's and load from it. */
  static async restore(backend: Backend, data: SnapshotSource, options: StateOptions): Promise<ServerState> {
    const store = await KvStore.importSnapshot(backend, data, { quotaBackendBytes: options.quotaBackendBytes });
    return ServerState.#assemble(backend, store, options);
  }

  static async #assemble(backend: Backend, store: KvStore, options: StateOptions): Promise<ServerState> {
    const lessor = await Lessor.load(backend, store, { minTtlSeconds: options.minLeaseTtlSeconds });
    store.setLeaseHooks(lessor);
    const alarms = await AlarmStore.load(backend, store.buffer);
    const membership = await Membership.load(backend);
    const auth = await AuthStore.load(backend, store.buffer);
    const applier = new Applier({ store, lessor, alarms, membership, auth });
    return new ServerState(store, lessor, alarms, membership, auth, applier);
  }
}
