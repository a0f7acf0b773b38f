/**
 * The error table's gRPC codes (node/errors.ts names them as the specification does) as grpc-js numbers,
 * and what a handler sends back for anything thrown below the gRPC layer.
 */
import { Status } from '../grpc-status.js';
import { etcdStatusOf, type GrpcCodeName } from '../../node/errors.js';

/** What a gRPC handler sends back: `details` is the message clients match on. */
export interface GrpcStatusError {
  code: Status;
  details: string;
}

export function grpcCode(name: GrpcCodeName): Status {
  return Status[name];
}

/** Maps anything thrown below the gRPC layer to the status etcd would send. Never exposes a stack. */
export function toGrpcError(err: unknown): GrpcStatusError {
  const { status, message } = etcdStatusOf(err);
  return { code: grpcCode(status), details: message };
}
