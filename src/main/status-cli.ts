/**
 * `etcetera status` (issue 26, item 4): one line per member, like `etcdctl endpoint status`, with what a board
 * operator asks first: is it healthy, who leads, the term, how fast its disk syncs (p50/p99 of the last
 * minute), its storage profile, how much it writes per day, and how long its card lasts at that rate.
 *
 *   etcetera status [--endpoints 127.0.0.1:2379,...] [-w table|json] [--cacert F --cert F --key F]
 *
 * It reads each member's GET /status (main/member-status.ts) on the client URL; `-w json` prints those
 * objects as an array, each with its "endpoint" (or "error" when it did not answer). Exit 1 when a member
 * did not answer or is unhealthy, as `etcdctl endpoint health` does.
 */
import { readFileSync } from 'node:fs';
import * as http from 'node:http';
import * as https from 'node:https';
import { ConfigError } from '../config/config.js';
import { healthCheckTimeoutMs } from '../metrics/metrics-http.js';
import { wearWarningSpanMsMin } from '../metrics/wear.js';
import { textTable } from '../base/text-table.js';
import { humanBytes } from '../backup/progress.js';
import { parseArgs, tlsOf, type CliStreams } from '../backup/snapshot-cli.js';
import type { EndpointTls } from '../backup/fetch-snapshot.js';
import type { MemberStatusJson } from './member-status.js';

/** A member's /status includes its /health check, which may take its whole timeout before it answers. */
export const statusTimeoutMs = healthCheckTimeoutMs + 2_000;

export const statusUsage = `etcetera status: health, leader, term, fsync latency and disk wear of each member

Usage:
  etcetera status [--endpoints HOST:PORT,...] [-w table|json] [--cacert F] [--cert F] [--key F] [--insecure-skip-tls-verify]

Reads GET /status on each client URL (ETCDCTL_ENDPOINTS and the ETCDCTL_* TLS variables work too).
Columns: BUILD is the member's etcetera version; FSYNC P50/P99 are the WAL's syncs of the last minute;
WRITTEN/DAY is the rate of the last day (or since the member started), with the window it was measured over;
DISK LIFE is --storage-endurance-tbw at that rate ("!" when under --storage-life-warning-years), "measuring"
until the window covers an hour. S3 UPLOAD (shown when a member uploads) is its last off-site upload.
`;

export type StatusRow = ({ endpoint: string } & MemberStatusJson) | { endpoint: string; error: string };

export async function statusCommand(argv: string[], io: CliStreams, env: NodeJS.ProcessEnv = process.env): Promise<number> {
  if (argv.includes('--help') || argv.includes('-h') || argv[0] === 'help') {
    io.stdout.write(statusUsage);
    return 0;
  }
  let endpoints: string[];
  let format: string;
  let tls: EndpointTls;
  try {
    const a = parseArgs(argv);
    if (a.positional.length > 0) throw new ConfigError(`unexpected argument ${JSON.stringify(a.positional[0])}`);
    endpoints = (a.flags.get('endpoints') ?? env.ETCDCTL_ENDPOINTS ?? '127.0.0.1:2379').split(',').map((e) => e.trim()).filter((e) => e !== '');
    format = a.flags.get('write-out') ?? 'table';
    if (format !== 'table' && format !== 'json') throw new ConfigError(`-w ${format}: only table and json`);
    tls = tlsOf(a, env);
  } catch (error) {
    io.stderr.write(`etcetera status: ${(error as Error).message}\n\n${statusUsage}`);
    return 2;
  }
  const rows = await Promise.all(endpoints.map(async (endpoint): Promise<StatusRow> => {
    try {
      return { endpoint, ...(await fetchStatus(endpoint, tls)) };
    } catch (error) {
      return { endpoint, error: error instanceof Error ? error.message : String(error) };
    }
  }));
  io.stdout.write(format === 'json' ? `${JSON.stringify(rows)}\n` : `${statusTable(rows)}${offsiteLines(rows)}`);
  for (const r of rows) if ('error' in r) io.stderr.write(`${r.endpoint}: ${r.error}\n`);
  return rows.every((r) => !('error' in r) && r.health) ? 0 : 1;
}

/** The table etcetera status prints (exported for its unit test). */
export function statusTable(rows: readonly StatusRow[]): string {
  const heads = ['ENDPOINT', 'ID', 'BUILD', 'HEALTH', 'LEADER', 'TERM', 'FSYNC P50', 'FSYNC P99', 'PROFILE', 'WRITTEN/DAY', 'DISK LIFE'];
  const cells = rows.map((r) => {
    if ('error' in r) return [r.endpoint, '-', '-', 'unreachable', '-', '-', '-', '-', '-', '-', '-'];
    const d = r.disk;
    return [
      // A member before 0.2 reports no build.
      r.endpoint, r.member, (r.build as string | undefined) ?? '-', r.health ? 'true' : `false (${r.healthReason})`, r.leader === '0' ? 'none' : r.leader, String(r.term),
      milliseconds(r.walFsync.p50Seconds), milliseconds(r.walFsync.p99Seconds), r.storageProfile,
      d.bytesPerDay === null ? '-' : `${humanBytes(d.bytesPerDay)} (${windowText(d.rateWindowSeconds)})`,
      lifeText(d.projectedLifeYears, d.bytesPerDay, d.lifeWarning, d.rateWindowSeconds),
    ];
  });
  // The S3 UPLOAD column only when a member uploads (--etcd-s3).
  if (rows.some((r) => 'offsite' in r && r.offsite !== undefined)) {
    heads.push('S3 UPLOAD');
    rows.forEach((r, i) => cells[i]!.push('error' in r ? '-' : offsiteText(r.offsite)));
  }
  return textTable(heads, cells);
}

/** --etcd-s3 uploads (issue 36): '-' when off. */
function offsiteText(o: MemberStatusJson['offsite']): string {
  if (o === undefined) return '-';
  if (o.failuresSinceSuccess > 0) return `failing (${o.failuresSinceSuccess})`;
  if (o.lastSuccessAt !== null) return 'ok';
  return o.pending ? 'pending' : 'none yet';
}

/** Below the table: why a member's uploads fail. */
function offsiteLines(rows: readonly StatusRow[]): string {
  return rows.map((r) => ('offsite' in r && r.offsite !== undefined && r.offsite.failuresSinceSuccess > 0
    ? `${r.endpoint}: uploads to ${r.offsite.bucket} failing since ${r.offsite.lastFailureAt}: ${r.offsite.lastError}\n`
    : '')).join('');
}

function milliseconds(seconds: number | null): string {
  return seconds === null ? '-' : `${(seconds * 1000).toFixed(seconds < 0.01 ? 2 : 1)} ms`;
}

/** The span a rate was measured over: `40 s`, `12 min`, `5.5 h`, `1 d`. */
function windowText(seconds: number | null): string {
  if (seconds === null) return '-';
  if (seconds < 120) return `${seconds} s`;
  if (seconds < 3600) return `${Math.round(seconds / 60)} min`;
  return seconds < 86_400 ? `${(seconds / 3600).toFixed(1)} h` : '1 d';
}

function lifeText(years: number | null, bytesPerDay: number | null, warning: boolean, windowSeconds: number | null): string {
  if (bytesPerDay === 0) return 'no writes';
  // No life projected from less than the declared minimum window (metrics/wear.ts: wearWarningSpanMsMin).
  if (years === null) return bytesPerDay === null ? '-' : `measuring (${windowText(windowSeconds)} of ${windowText(wearWarningSpanMsMin / 1000)})`;
  return `${years >= 100 ? '> 100' : years.toFixed(1)} years${warning ? ' !' : ''}`;
}

/** GET <endpoint>/status; "host:port" is http unless TLS files are given, as etcdctl dials. */
export function fetchStatus(endpoint: string, tls: EndpointTls): Promise<MemberStatusJson> {
  const secure = endpoint.startsWith('https://') || (!endpoint.startsWith('http://') && (tls.caFile !== undefined || tls.certFile !== undefined));
  const url = new URL(`${endpoint.includes('://') ? endpoint : `${secure ? 'https' : 'http'}://${endpoint}`}/status`);
  const options: https.RequestOptions = {
    method: 'GET',
    timeout: statusTimeoutMs,
    ...(tls.caFile !== undefined ? { ca: readFileSync(tls.caFile) } : {}),
    ...(tls.certFile !== undefined ? { cert: readFileSync(tls.certFile) } : {}),
    ...(tls.keyFile !== undefined ? { key: readFileSync(tls.keyFile) } : {}),
    ...(tls.insecureSkipVerify === true ? { rejectUnauthorized: false } : {}),
  };
  return new Promise((resolve, reject) => {
    const req = (url.protocol === 'https:' ? https : http).request(url, options, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('error', reject);
      res.on('end', () => {
        const text = Buffer.concat(chunks).toString('utf8');
        if (res.statusCode !== 200) return reject(new Error(`GET ${url.pathname}: HTTP ${res.statusCode} ${text.trim().slice(0, 200)}`));
        try {
          resolve(JSON.parse(text) as MemberStatusJson);
        } catch {
          reject(new Error(`GET ${url.pathname}: not JSON (is this an etcetera member?)`));
        }
      });
    });
    req.on('timeout', () => req.destroy(new Error(`no answer in ${statusTimeoutMs} ms`)));
    req.on('error', reject);
    req.end();
  });
}
