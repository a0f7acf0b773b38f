/** etcdserverpb.Auth: users, roles, permissions, enable/disable, tokens (etcd's api/v3rpc/auth.go). */
import type { UntypedServiceImplementation } from '@grpc/grpc-js';
import type { AuthApi } from '../../node/access/auth-api.js';
import type { Permission, PermType } from '../../auth/types.js';
import type { EtcdApi, RequestContext } from '../../node/server-api.js';
import { unary } from './call.js';
import { encodeHeader, n64 } from './messages.js';
import type { Wire } from './proto.js';

const noBytes = new Uint8Array(0);

function decodePermission(p: Wire | null | undefined): Permission | undefined {
  if (p === null || p === undefined) return undefined;
  return { permType: (p.permType ?? 0) as PermType, key: p.key ?? noBytes, rangeEnd: p.rangeEnd ?? noBytes };
}

function encodePermission(p: Permission): Wire {
  return { permType: p.permType, key: p.key, rangeEnd: p.rangeEnd };
}

export function authService(api: EtcdApi, auth: AuthApi): UntypedServiceImplementation {
  /** Every Auth response is a header plus, for some, one field. */
  const call = (run: (m: Wire, ctx: RequestContext) => Promise<Wire | void>) =>
    unary(api, async (m, ctx) => ({ ...((await run(m, ctx)) ?? {}), header: encodeHeader(api.header()) }));
  return {
    AuthEnable: call((_m, ctx) => auth.authEnable(ctx)),
    AuthDisable: call((_m, ctx) => auth.authDisable(ctx)),
    AuthStatus: call(async (_m, ctx) => {
      const s = await auth.authStatus(ctx);
      return { enabled: s.enabled, authRevision: n64(s.authRevision, 'authRevision') };
    }),
    Authenticate: call(async (m, ctx) => ({ token: await auth.authenticate(m.name, m.password, ctx) })),
    UserAdd: call((m, ctx) =>
      auth.userAdd({ name: m.name, password: m.password, hashedPassword: m.hashedPassword, noPassword: m.options?.noPassword === true }, ctx),
    ),
    UserGet: call(async (m, ctx) => ({ roles: await auth.userGet(m.name, ctx) })),
    UserList: call(async (_m, ctx) => ({ users: await auth.userList(ctx) })),
    UserDelete: call((m, ctx) => auth.userDelete(m.name, ctx)),
    UserChangePassword: call((m, ctx) =>
      auth.userChangePassword({ name: m.name, password: m.password, hashedPassword: m.hashedPassword }, ctx),
    ),
    UserGrantRole: call((m, ctx) => auth.userGrantRole(m.user, m.role, ctx)),
    UserRevokeRole: call((m, ctx) => auth.userRevokeRole(m.name, m.role, ctx)),
    RoleAdd: call((m, ctx) => auth.roleAdd(m.name, ctx)),
    RoleGet: call(async (m, ctx) => ({ perm: (await auth.roleGet(m.role, ctx)).map(encodePermission) })),
    RoleList: call(async (_m, ctx) => ({ roles: await auth.roleList(ctx) })),
    RoleDelete: call((m, ctx) => auth.roleDelete(m.role, ctx)),
    RoleGrantPermission: call((m, ctx) => auth.roleGrantPermission(m.name, decodePermission(m.perm), ctx)),
    RoleRevokePermission: call((m, ctx) => auth.roleRevokePermission(m.role, m.key ?? noBytes, m.rangeEnd ?? noBytes, ctx)),
  };
}
