export { startGrpcServer } from './server.js';
export type { GrpcServerHandle, GrpcServerOptions, GrpcTlsOptions } from './server.js';
export { etcdVersion } from './maintenance-service.js';
export { serviceDefinition, protoRoot } from './proto.js';
