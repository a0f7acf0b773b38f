/**
 * The gRPC gateway's URL of every method, as etcd's .proto files map them (`option (google.api.http) = { post:
 * ... body: "*" }`, stripped from our copies) plus the v3lock and v3election gateways etcd mounts beside them.
 * Every route is POST with the request message as its JSON body.
 */
export interface Route {
  /** e.g. "etcdserverpb.KV" */
  service: string;
  /** e.g. "Range" */
  method: string;
}

const table: Record<string, [string, string]> = {
  '/v3/kv/range': ['etcdserverpb.KV', 'Range'],
  '/v3/kv/put': ['etcdserverpb.KV', 'Put'],
  '/v3/kv/deleterange': ['etcdserverpb.KV', 'DeleteRange'],
  '/v3/kv/txn': ['etcdserverpb.KV', 'Txn'],
  '/v3/kv/compaction': ['etcdserverpb.KV', 'Compact'],
  '/v3/watch': ['etcdserverpb.Watch', 'Watch'],
  '/v3/lease/grant': ['etcdserverpb.Lease', 'LeaseGrant'],
  '/v3/lease/revoke': ['etcdserverpb.Lease', 'LeaseRevoke'],
  '/v3/kv/lease/revoke': ['etcdserverpb.Lease', 'LeaseRevoke'],
  '/v3/lease/keepalive': ['etcdserverpb.Lease', 'LeaseKeepAlive'],
  '/v3/lease/timetolive': ['etcdserverpb.Lease', 'LeaseTimeToLive'],
  '/v3/kv/lease/timetolive': ['etcdserverpb.Lease', 'LeaseTimeToLive'],
  '/v3/lease/leases': ['etcdserverpb.Lease', 'LeaseLeases'],
  '/v3/kv/lease/leases': ['etcdserverpb.Lease', 'LeaseLeases'],
  '/v3/cluster/member/add': ['etcdserverpb.Cluster', 'MemberAdd'],
  '/v3/cluster/member/remove': ['etcdserverpb.Cluster', 'MemberRemove'],
  '/v3/cluster/member/update': ['etcdserverpb.Cluster', 'MemberUpdate'],
  '/v3/cluster/member/list': ['etcdserverpb.Cluster', 'MemberList'],
  '/v3/cluster/member/promote': ['etcdserverpb.Cluster', 'MemberPromote'],
  '/v3/maintenance/alarm': ['etcdserverpb.Maintenance', 'Alarm'],
  '/v3/maintenance/status': ['etcdserverpb.Maintenance', 'Status'],
  '/v3/maintenance/defragment': ['etcdserverpb.Maintenance', 'Defragment'],
  '/v3/maintenance/hash': ['etcdserverpb.Maintenance', 'Hash'],
  '/v3/maintenance/hashkv': ['etcdserverpb.Maintenance', 'HashKV'],
  '/v3/maintenance/snapshot': ['etcdserverpb.Maintenance', 'Snapshot'],
  '/v3/maintenance/transfer-leadership': ['etcdserverpb.Maintenance', 'MoveLeader'],
  '/v3/auth/enable': ['etcdserverpb.Auth', 'AuthEnable'],
  '/v3/auth/disable': ['etcdserverpb.Auth', 'AuthDisable'],
  '/v3/auth/status': ['etcdserverpb.Auth', 'AuthStatus'],
  '/v3/auth/authenticate': ['etcdserverpb.Auth', 'Authenticate'],
  '/v3/auth/user/add': ['etcdserverpb.Auth', 'UserAdd'],
  '/v3/auth/user/get': ['etcdserverpb.Auth', 'UserGet'],
  '/v3/auth/user/list': ['etcdserverpb.Auth', 'UserList'],
  '/v3/auth/user/delete': ['etcdserverpb.Auth', 'UserDelete'],
  '/v3/auth/user/changepw': ['etcdserverpb.Auth', 'UserChangePassword'],
  '/v3/auth/user/grant': ['etcdserverpb.Auth', 'UserGrantRole'],
  '/v3/auth/user/revoke': ['etcdserverpb.Auth', 'UserRevokeRole'],
  '/v3/auth/role/add': ['etcdserverpb.Auth', 'RoleAdd'],
  '/v3/auth/role/get': ['etcdserverpb.Auth', 'RoleGet'],
  '/v3/auth/role/list': ['etcdserverpb.Auth', 'RoleList'],
  '/v3/auth/role/delete': ['etcdserverpb.Auth', 'RoleDelete'],
  '/v3/auth/role/grant': ['etcdserverpb.Auth', 'RoleGrantPermission'],
  '/v3/auth/role/revoke': ['etcdserverpb.Auth', 'RoleRevokePermission'],
  '/v3/lock/lock': ['v3lockpb.Lock', 'Lock'],
  '/v3/lock/unlock': ['v3lockpb.Lock', 'Unlock'],
  '/v3/election/campaign': ['v3electionpb.Election', 'Campaign'],
  '/v3/election/proclaim': ['v3electionpb.Election', 'Proclaim'],
  '/v3/election/leader': ['v3electionpb.Election', 'Leader'],
  '/v3/election/observe': ['v3electionpb.Election', 'Observe'],
  '/v3/election/resign': ['v3electionpb.Election', 'Resign'],
};

const routes = new Map<string, Route>(Object.entries(table).map(([p, [service, method]]) => [p, { service, method }]));

/**
 * etcd 3.4 mounts the same gateway under `/v3beta/` too (clients that detect a 3.3/3.4 server call it; 3.5
 * dropped it), so every `/v3beta/…` path is its `/v3/…` twin. `/v3alpha/` is 404 on 3.4 as here.
 */
const betaPrefix = '/v3beta/';

export function routeOf(pathname: string): Route | undefined {
  return routes.get(pathname.startsWith(betaPrefix) ? `/v3/${pathname.slice(betaPrefix.length)}` : pathname);
}

export function isGatewayPath(pathname: string): boolean {
  return pathname.startsWith('/v3/') || pathname.startsWith(betaPrefix);
}
