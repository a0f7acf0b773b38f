/**
 * The JSON gateway, loaded on its first request (issue 34): a member whose clients all speak gRPC never
 * evaluates the gateway's modules (JSON codec, streams, routes' handlers), which a member at rest held in
 * source, code and shapes. The request waits for the import; its body stays buffered in the paused stream.
 *
 * A client can never stop the process: a request the gateway could not take (its import failed, or it threw
 * on that request) is answered 500 INTERNAL, as the gateway answers an internal error, and logged. A broken
 * invariant (AssertionError) is still rethrown after that answer: it stops the member, as it would in a
 * loaded gateway. A request whose client went away while the import ran is not handed over.
 */
import type { UntypedServiceImplementation } from '@grpc/grpc-js';
import type * as http from 'node:http';
import { AssertionError } from '../../base/assert.js';
import type { Logger } from '../../config/log.js';
import { Status } from '../grpc-status.js';
import type { GatewayHandler } from './gateway.js';
import { answerStatus } from './gateway-answers.js';
import { isGatewayPath } from './routes.js';

export type GatewayLoader = (services: ReadonlyMap<string, UntypedServiceImplementation>) => Promise<GatewayHandler>;

const importGateway: GatewayLoader = async (services) => (await import('./gateway.js')).createGateway(services);

/** `load` is the import (tests pass one they settle). */
export function lazyGateway(services: ReadonlyMap<string, UntypedServiceImplementation>, logger: Logger | undefined, load: GatewayLoader = importGateway): GatewayHandler {
  let loaded: GatewayHandler | undefined;
  let loading: Promise<GatewayHandler> | undefined;
  return (req, res) => {
    if (loaded !== undefined) return loaded(req, res);
    if (!isGatewayPath(new URL(req.url ?? '/', 'http://x').pathname)) return false;
    loading ??= load(services).then((handler) => (loaded = handler));
    loading
      .then((handler) => {
        if (!gone(req, res)) handler(req, res);
      })
      .catch((error: unknown) => {
        logger?.error('the JSON gateway could not take a request', { error: error instanceof Error ? error.message : String(error) });
        answerStatus(res, { code: Status.INTERNAL, details: 'internal error' });
        if (error instanceof AssertionError) throw error;
      });
    return true;
  };
}

/** The client closed the connection, or the response was ended, while the gateway loaded. */
function gone(req: http.IncomingMessage, res: http.ServerResponse): boolean {
  return res.destroyed || res.writableEnded || req.socket.destroyed;
}
