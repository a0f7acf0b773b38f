/**
 * Auth when the core has no authApi (EtcdApi.authApi is optional): every method
 * answers UNIMPLEMENTED at once (streams too), so clients fail fast instead of hanging.
 */
import type { ServerWritableStream, UntypedServiceImplementation } from '@grpc/grpc-js';
import { protoRoot } from './proto.js';
import { unimplemented, unimplementedUnary } from './call.js';
import type { Wire } from './proto.js';

export function unimplementedService(fullName: string): UntypedServiceImplementation {
  const service = protoRoot().lookupService(fullName);
  const shortName = fullName.slice(fullName.lastIndexOf('.') + 1);
  const impl: UntypedServiceImplementation = {};
  for (const method of service.methodsArray) {
    const name = `${shortName}.${method.name}`;
    impl[method.name] = method.responseStream
      ? (call: ServerWritableStream<Wire, Wire>) => call.emit('error', unimplemented(name))
      : unimplementedUnary(name);
  }
  return impl;
}

export const unimplementedServiceNames = ['etcdserverpb.Auth'];
