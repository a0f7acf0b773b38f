/**
 * gRPC status codes, the specification's numbers (doc/statuscodes.md; grpc-go's codes, grpc-js' `status`), held
 * here so the services, the gateway and our node:http2 server need no gRPC library to name them (issue 34):
 * grpc-js is loaded only for `--grpc-server grpc-js` and by clients (join, tools).
 */
export const Status = {
  OK: 0,
  CANCELLED: 1,
  UNKNOWN: 2,
  INVALID_ARGUMENT: 3,
  DEADLINE_EXCEEDED: 4,
  NOT_FOUND: 5,
  ALREADY_EXISTS: 6,
  PERMISSION_DENIED: 7,
  RESOURCE_EXHAUSTED: 8,
  FAILED_PRECONDITION: 9,
  ABORTED: 10,
  OUT_OF_RANGE: 11,
  UNIMPLEMENTED: 12,
  INTERNAL: 13,
  UNAVAILABLE: 14,
  DATA_LOSS: 15,
  UNAUTHENTICATED: 16,
} as const;

/** One of the codes above. */
export type Status = (typeof Status)[keyof typeof Status];
