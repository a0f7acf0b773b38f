/**
 * The metrics/health HTTP endpoints etcd serves on --listen-metrics-urls (and on its client URLs):
 *   GET /metrics  Prometheus text format 0.0.4
 *   GET /health   {"health":"true","reason":""}  (503 and "false" with a reason when unhealthy)
 *   GET /livez    "ok" while the process serves requests
 *   GET /readyz   "ok" once the member can serve (503 otherwise)
 * Anything else is 404. `createMetricsHandler` is exported so the same routes can be mounted elsewhere: the
 * client port serves them too, with `/version` (`createVersionHandler`).
 */
import * as http from 'node:http';
import * as https from 'node:https';
import { readFileSync } from 'node:fs';
import type { AddressInfo, Server } from 'node:net';
import type { Logger } from '../config/log.js';
import { logListenerErrors } from '../config/listener-errors.js';
import { type Registry, exposition004ContentType } from './metrics.js';

export interface HealthResult {
  health: boolean;
  reason: string;
}

export type HealthCheck = () => Promise<HealthResult>;

export interface MetricsHandlerOptions {
  registry: Registry;
  health: HealthCheck;
  /** Default: same as health. */
  ready?: HealthCheck;
  /** Default: always live (answering at all proves the event loop runs). */
  live?: HealthCheck;
  /** A check that has not answered by then counts as failed (default healthCheckTimeoutMs). */
  checkTimeoutMs?: number;
}

/** How long a /health check may take before it counts as failed: etcdctl's --command-timeout default. */
export const healthCheckTimeoutMs = 5_000;

/** Handles the routes above; returns false (and writes nothing) for other paths, so hosts can chain. */
export type MetricsRequestHandler = (req: http.IncomingMessage, res: http.ServerResponse) => boolean;

const routes = new Set(['/metrics', '/health', '/livez', '/readyz']);

export function createMetricsHandler(options: MetricsHandlerOptions): MetricsRequestHandler {
  const timeoutMs = options.checkTimeoutMs ?? healthCheckTimeoutMs;
  const ready = options.ready ?? options.health;
  const live = options.live ?? (async () => ({ health: true, reason: '' }));
  return (req, res) => {
    const path = new URL(req.url ?? '/', 'http://x').pathname;
    if (!routes.has(path)) return false;
    if (req.method !== 'GET' && req.method !== 'HEAD') {
      res.writeHead(405, { allow: 'GET, HEAD', 'content-type': 'text/plain; charset=utf-8' }).end('Method Not Allowed\n');
      return true;
    }
    if (path === '/metrics') {
      respond(res, req.method, 200, exposition004ContentType, options.registry.expose());
      return true;
    }
    const check = path === '/health' ? options.health : path === '/readyz' ? ready : live;
    void runCheck(check, timeoutMs).then((result) => {
      if (path === '/health') {
        // etcd's exact shape: strings, not booleans (etcdctl and load balancers parse it).
        const body = `${JSON.stringify({ health: String(result.health), reason: result.reason })}\n`;
        respond(res, req.method, result.health ? 200 : 503, 'application/json', body);
      } else {
        const body = result.health ? 'ok\n' : `failed: ${result.reason}\n`;
        respond(res, req.method, result.health ? 200 : 503, 'text/plain; charset=utf-8', body);
      }
    });
    return true;
  };
}

/**
 * GET /version: `{"etcdserver":"3.5.17","etcdcluster":"3.5.0"}`, the server version Status reports and the
 * cluster version (major.minor.0, as etcd reports it once every member runs that minor version).
 */
export function createVersionHandler(serverVersion: string): MetricsRequestHandler {
  const [major, minor] = serverVersion.split('.');
  const body = JSON.stringify({ etcdserver: serverVersion, etcdcluster: `${major}.${minor}.0` });
  return (req, res) => {
    if (new URL(req.url ?? '/', 'http://x').pathname !== '/version') return false;
    if (req.method !== 'GET' && req.method !== 'HEAD') {
      res.writeHead(405, { allow: 'GET, HEAD', 'content-type': 'text/plain; charset=utf-8' }).end('Method Not Allowed\n');
      return true;
    }
    respond(res, req.method, 200, 'application/json', body);
    return true;
  };
}

/** GET `path`: the JSON of `body()` (500 with {"error"} when it fails), e.g. /status (main/member-status.ts). */
export function createJsonHandler(path: string, body: () => Promise<unknown>): MetricsRequestHandler {
  return (req, res) => {
    if (new URL(req.url ?? '/', 'http://x').pathname !== path) return false;
    if (req.method !== 'GET' && req.method !== 'HEAD') {
      res.writeHead(405, { allow: 'GET, HEAD', 'content-type': 'text/plain; charset=utf-8' }).end('Method Not Allowed\n');
      return true;
    }
    body().then(
      (value) => respond(res, req.method, 200, 'application/json', `${JSON.stringify(value)}\n`),
      (error: unknown) => respond(res, req.method, 500, 'application/json', `${JSON.stringify({ error: error instanceof Error ? error.message : String(error) })}\n`),
    );
    return true;
  };
}

async function runCheck(check: HealthCheck, timeoutMs: number): Promise<HealthResult> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<HealthResult>((resolve) => {
    timer = setTimeout(() => resolve({ health: false, reason: 'health check timed out' }), timeoutMs);
  });
  try {
    return await Promise.race([check(), timeout]);
  } catch (err) {
    return { health: false, reason: (err as Error).message };
  } finally {
    clearTimeout(timer);
  }
}

function respond(res: http.ServerResponse, method: string | undefined, status: number, type: string, body: string): void {
  res.writeHead(status, { 'content-type': type, 'content-length': Buffer.byteLength(body) });
  res.end(method === 'HEAD' ? undefined : body);
}

export interface MetricsHttpOptions extends MetricsHandlerOptions {
  /** http(s)://host:port (port 0 picks a free one). */
  listenUrls: string[];
  /** More routes, tried after the metrics and health ones (e.g. /status). */
  routes?: MetricsRequestHandler[];
  /** Needed for https URLs (etcd uses --cert-file/--key-file for metrics URLs too). */
  tls?: { certFile: string; keyFile: string };
  logger?: Logger;
}

export interface MetricsHttp {
  /** The bound URLs, with the actual ports. */
  urls: string[];
  close(): Promise<void>;
}

/**
 * Listens on `url`'s host and port (80 when none; 0 picks a free one) and logs the listener's later errors;
 * resolves to the URL with the bound port.
 */
export async function listenAt(server: Server, url: URL, logger: Logger | undefined, what: string): Promise<string> {
  const host = url.hostname.replace(/^\[(.*)\]$/, '$1');
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(Number(url.port === '' ? 80 : url.port), host, () => {
      server.off('error', reject);
      resolve();
    });
  });
  logListenerErrors(server, logger, `${what} ${url.host}`);
  return `${url.protocol}//${url.hostname}:${(server.address() as AddressInfo).port}`;
}

export async function startMetricsHttp(options: MetricsHttpOptions): Promise<MetricsHttp> {
  const routes = [createMetricsHandler(options), ...(options.routes ?? [])];
  const handler: MetricsRequestHandler = (req, res) => routes.some((route) => route(req, res));
  const servers: http.Server[] = [];
  const urls: string[] = [];
  const listener = (req: http.IncomingMessage, res: http.ServerResponse): void => {
    if (!handler(req, res)) res.writeHead(404, { 'content-type': 'text/plain; charset=utf-8' }).end('404 page not found\n');
  };
  const close = async (): Promise<void> => {
    await Promise.all(
      servers.map((s) => new Promise<void>((resolve) => {
        s.closeAllConnections();
        s.close(() => resolve());
      })),
    );
  };
  try {
    for (const raw of options.listenUrls) {
      const url = new URL(raw);
      if (url.protocol !== 'http:' && url.protocol !== 'https:') throw new TypeError(`metrics URL ${raw} must be http or https`);
      const secure = url.protocol === 'https:';
      if (secure && options.tls === undefined) throw new TypeError(`metrics URL ${raw} is https but no certificate was given`);
      const server = secure && options.tls !== undefined
        ? https.createServer({ cert: readFileSync(options.tls.certFile), key: readFileSync(options.tls.keyFile) }, listener)
        : http.createServer(listener);
      servers.push(server);
      const bound = await listenAt(server, url, options.logger, 'metrics listener');
      urls.push(bound);
      options.logger?.info('serving metrics and health', { url: bound });
    }
  } catch (err) {
    await close();
    throw err;
  }
  return { urls, close };
}
