/**
 * The gateway's error answers (grpc-gateway v1's, see gateway.ts), apart from the gateway so the client port
 * can answer a request the gateway could not take without loading the gateway's modules (lazy-gateway.ts).
 */
import * as http from 'node:http';
import { Status } from '../grpc-status.js';
import type { CallStatus } from './gateway-call.js';

/** runtime.HTTPStatusFromCode of grpc-gateway v1. */
const httpStatusOf: Record<number, number> = {
  [Status.OK]: 200,
  [Status.CANCELLED]: 408,
  [Status.UNKNOWN]: 500,
  [Status.INVALID_ARGUMENT]: 400,
  [Status.DEADLINE_EXCEEDED]: 504,
  [Status.NOT_FOUND]: 404,
  [Status.ALREADY_EXISTS]: 409,
  [Status.PERMISSION_DENIED]: 403,
  [Status.UNAUTHENTICATED]: 401,
  [Status.RESOURCE_EXHAUSTED]: 429,
  [Status.FAILED_PRECONDITION]: 412,
  [Status.ABORTED]: 409,
  [Status.OUT_OF_RANGE]: 400,
  [Status.UNIMPLEMENTED]: 501,
  [Status.INTERNAL]: 500,
  [Status.UNAVAILABLE]: 503,
  [Status.DATA_LOSS]: 500,
};

/** What etcd's HTTP handler chain adds to gateway answers (its default --cors is "*"). */
export const corsHeaders = {
  'access-control-allow-headers': 'accept, content-type, authorization',
  'access-control-allow-methods': 'POST, GET, OPTIONS, PUT, DELETE',
  'access-control-allow-origin': '*',
};
export const jsonHeaders = { ...corsHeaders, 'content-type': 'application/json', 'grpc-metadata-content-type': 'application/grpc' };

/**
 * Ends `res` with a failed call's status: `{"error", "message", "code"}` with its HTTP status, or, once a
 * stream's head was sent, a last line `{"error": {"grpc_code", "http_code", "message", "http_status"}}`.
 * Nothing when the response already ended or its connection closed.
 */
export function answerStatus(res: http.ServerResponse, status: CallStatus): void {
  if (res.writableEnded || res.destroyed) return;
  const httpStatus = httpStatusOf[status.code] ?? 500;
  if (!res.headersSent) {
    const body = JSON.stringify({ error: status.details, message: status.details, code: status.code });
    res.writeHead(httpStatus, { ...jsonHeaders, 'content-length': Buffer.byteLength(body) }).end(body);
    return;
  }
  const chunk = { grpc_code: status.code, http_code: httpStatus, message: status.details, http_status: http.STATUS_CODES[httpStatus] };
  res.end(`${JSON.stringify({ error: chunk })}\n`);
}
