/**
 * etcd's gRPC server metrics (go-grpc-prometheus): grpc_server_started_total, grpc_server_handled_total,
 * grpc_server_msg_received_total and grpc_server_msg_sent_total, labelled grpc_type, grpc_service,
 * grpc_method (and grpc_code), plus etcd_server_client_requests_total. Each registered handler is wrapped
 * once at addService; counting is a few map updates per call.
 *
 * The counts that etcd keeps in mvcc and the lessor but that we only see here (ranges, txns, lease grants,
 * revokes, keepalives) are derived from the calls this member answered; `onHandled` feeds them.
 */
import type * as grpc from '@grpc/grpc-js';
import type { Counter, Registry } from './metrics.js';

/** grpc codes.Code.String() names, by number. */
const codeNames = [
  'OK', 'Canceled', 'Unknown', 'InvalidArgument', 'DeadlineExceeded', 'NotFound', 'AlreadyExists', 'PermissionDenied',
  'ResourceExhausted', 'FailedPrecondition', 'Aborted', 'OutOfRange', 'Unimplemented', 'Internal', 'Unavailable', 'DataLoss',
  'Unauthenticated',
] as const;

export interface GrpcMetrics {
  started: Counter;
  handled: Counter;
  received: Counter;
  sent: Counter;
  clientRequests: Counter;
  /** Called for every finished call (and every received stream message, with code 'msg'). */
  onHandled: Array<(service: string, method: string, code: string) => void>;
}

export function registerGrpcMetrics(registry: Registry): GrpcMetrics {
  const labelNames = ['grpc_type', 'grpc_service', 'grpc_method'];
  return {
    started: registry.counter({ name: 'grpc_server_started_total', help: 'Total number of RPCs started on the server.', labelNames }),
    handled: registry.counter({
      name: 'grpc_server_handled_total', help: 'Total number of RPCs completed on the server, regardless of success or failure.',
      labelNames: [...labelNames, 'grpc_code'],
    }),
    received: registry.counter({ name: 'grpc_server_msg_received_total', help: 'Total number of RPC stream messages received on the server.', labelNames }),
    sent: registry.counter({ name: 'grpc_server_msg_sent_total', help: 'Total number of gRPC stream messages sent by the server.', labelNames }),
    clientRequests: registry.counter({
      name: 'etcd_server_client_requests_total', help: 'The total number of client requests per client version.', labelNames: ['type', 'client_api_version'],
    }),
    onHandled: [],
  };
}

type Labels = { grpc_type: string; grpc_service: string; grpc_method: string };

/** Wraps every service added to `server` from now on (grpc-js' Server, or anything with its addService). */
export function instrumentGrpcServer(server: Pick<grpc.Server, 'addService'>, m: GrpcMetrics): void {
  const addService = server.addService.bind(server);
  server.addService = (service: grpc.ServiceDefinition, implementation: grpc.UntypedServiceImplementation): void => {
    const wrapped: grpc.UntypedServiceImplementation = {};
    for (const [name, handler] of Object.entries(implementation)) {
      const def = service[name];
      if (def === undefined) {
        wrapped[name] = handler;
        continue;
      }
      const [, serviceName = '', methodName = name] = /^\/([^/]+)\/(.+)$/.exec(def.path) ?? [];
      const labels: Labels = { grpc_type: typeOf(def), grpc_service: serviceName, grpc_method: methodName };
      m.started.inc(0, labels);
      m.handled.inc(0, { ...labels, grpc_code: 'OK' });
      wrapped[name] = wrap(handler as (...args: unknown[]) => void, labels, m);
    }
    addService(service, wrapped);
  };
}

function typeOf(def: { requestStream: boolean; responseStream: boolean }): string {
  if (def.requestStream && def.responseStream) return 'bidi_stream';
  if (def.requestStream) return 'client_stream';
  if (def.responseStream) return 'server_stream';
  return 'unary';
}

interface CallLike {
  metadata?: grpc.Metadata;
  on(event: string, listener: (...args: unknown[]) => void): unknown;
  emit(event: string, ...args: unknown[]): boolean;
  write?: (...args: unknown[]) => boolean;
}

/** A method's counters, their label keys built once (every call bumps three to five of them). */
function methodCounters(labels: Labels, m: GrpcMetrics) {
  const handled = new Map<string, (by?: number) => void>();
  const versions = new Map<string, (by?: number) => void>();
  const type = labels.grpc_type === 'unary' ? 'unary' : 'stream';
  return {
    started: m.started.bind(labels),
    received: m.received.bind(labels),
    sent: m.sent.bind(labels),
    handled(code: string): void {
      let inc = handled.get(code);
      if (inc === undefined) handled.set(code, (inc = m.handled.bind({ ...labels, grpc_code: code })));
      inc();
    },
    clientRequest(version: string): void {
      const inc = versions.get(version);
      if (inc !== undefined) return inc();
      const labelSet = { type, client_api_version: version };
      // Versions come from clients: only a few are kept bound, the rest take the slower path.
      if (versions.size < clientVersionsBoundMax) versions.set(version, m.clientRequests.bind(labelSet));
      m.clientRequests.inc(1, labelSet);
    },
  };
}

/** Distinct client-api-version values per method whose counter is kept bound. */
const clientVersionsBoundMax = 8;

function wrap(handler: (...args: unknown[]) => void, labels: Labels, m: GrpcMetrics): (...args: unknown[]) => void {
  const unaryResponse = labels.grpc_type === 'unary' || labels.grpc_type === 'client_stream';
  const counters = methodCounters(labels, m);
  return (call: unknown, callback?: unknown) => {
    const c = call as CallLike;
    counters.started();
    const version = c.metadata?.get('client-api-version')[0];
    counters.clientRequest(typeof version === 'string' ? version : 'unknown');
    let done = false;
    const finish = (code: string): void => {
      if (done) return;
      done = true;
      counters.handled(code);
      for (const f of m.onHandled) f(labels.grpc_service, labels.grpc_method, code);
    };
    if (labels.grpc_type === 'unary' || labels.grpc_type === 'server_stream') counters.received();
    else {
      c.on('data', () => {
        counters.received();
        for (const f of m.onHandled) f(labels.grpc_service, labels.grpc_method, 'msg');
      });
    }
    if (unaryResponse) {
      const cb = callback as (err: { code?: number } | null, ...rest: unknown[]) => void;
      return handler(call, (err: { code?: number } | null, ...rest: unknown[]) => {
        if (err === null || err === undefined) counters.sent();
        finish(err === null || err === undefined ? 'OK' : codeName(err.code));
        cb(err, ...rest);
      });
    }
    const write = c.write;
    if (write !== undefined) {
      c.write = (...args: unknown[]) => {
        counters.sent();
        return write.apply(call, args);
      };
    }
    const emit = c.emit.bind(call);
    c.emit = (event: string, ...args: unknown[]) => {
      if (event === 'error') finish(codeName((args[0] as { code?: number } | undefined)?.code));
      return emit(event, ...args);
    };
    c.on('cancelled', () => finish('Canceled'));
    c.on('finish', () => finish('OK'));
    return handler(call);
  };
}

function codeName(code: number | undefined): string {
  return codeNames[code ?? 2] ?? 'Unknown';
}
