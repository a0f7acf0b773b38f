/**
 * k3s's off-site snapshot options (`--etcd-s3` and its companions), with k3s's names, defaults and meaning, so
 * a k3s config file's `etcd-s3-*` keys work unchanged. The server reads them through the option table
 * (config-options.ts); the snapshot verbs (`snapshot save|ls|delete|prune|restore`) read the same flags, and
 * k3s's shorter `--s3-*` spellings of its etcd-snapshot command, through s3OptionsOf below: one parser.
 */
import { s3TimeoutMsDefault } from '../base/limits.js';
import { parseDurationMs } from './duration.js';
import type { OptionSpec } from './option-spec.js';

export interface S3Options {
  /** host[:port], no scheme (k3s: default s3.amazonaws.com). */
  endpoint: string;
  /** A CA bundle file for the endpoint's certificate. */
  endpointCa?: string;
  skipSslVerify: boolean;
  /** Plain HTTP (k3s --etcd-s3-insecure). */
  insecure: boolean;
  accessKey: string;
  secretKey: string;
  bucket: string;
  region: string;
  /** Key prefix inside the bucket ('' for the bucket's root). */
  folder: string;
  timeoutMs: number;
  /**
   * An HTTP(S) proxy for the bucket's requests only (k3s --etcd-s3-proxy). Absent: the environment's
   * HTTPS_PROXY / HTTP_PROXY / NO_PROXY apply, as Go's http.ProxyFromEnvironment does for k3s.
   */
  proxy?: string;
}

const g = 'snapshots' as const;
/** The option table's rows (k3s's help texts). */
export const s3OptionSpecs: OptionSpec[] = [
  { group: g, flag: 'etcd-s3', kind: 'bool', default: 'false', help: 'Enable backup to S3: every snapshot is also uploaded to the bucket, retention applies there too.' },
  { group: g, flag: 'etcd-s3-endpoint', kind: 'string', default: 's3.amazonaws.com', help: 'S3 endpoint url (host[:port]).' },
  { group: g, flag: 'etcd-s3-endpoint-ca', kind: 'string', default: '', help: 'S3 custom CA cert to connect to S3 endpoint (a file).' },
  { group: g, flag: 'etcd-s3-skip-ssl-verify', kind: 'bool', default: 'false', help: 'Disables S3 SSL certificate validation.' },
  { group: g, flag: 'etcd-s3-access-key', kind: 'string', default: '', help: 'S3 access key (default: $AWS_ACCESS_KEY_ID).' },
  { group: g, flag: 'etcd-s3-secret-key', kind: 'string', default: '', help: 'S3 secret key (default: $AWS_SECRET_ACCESS_KEY).' },
  { group: g, flag: 'etcd-s3-bucket', kind: 'string', default: '', help: 'S3 bucket name.' },
  { group: g, flag: 'etcd-s3-region', kind: 'string', default: 'us-east-1', help: 'S3 region / bucket location.' },
  { group: g, flag: 'etcd-s3-folder', kind: 'string', default: '', help: 'S3 folder.' },
  { group: g, flag: 'etcd-s3-insecure', kind: 'bool', default: 'false', help: 'Disables S3 over HTTPS.' },
  { group: g, flag: 'etcd-s3-timeout', kind: 'duration', default: '5m0s', help: 'S3 timeout.' },
  {
    group: g, flag: 'etcd-s3-config-secret', kind: 'string', default: '', help: '',
    notice: 'ignored: etcetera has no Kubernetes API to read a Secret from; give the --etcd-s3-* options instead',
  },
  { group: g, flag: 'etcd-s3-proxy', kind: 'string', default: '', help: 'Proxy server to use when connecting to S3, overriding any proxy-related environment variables.' },
];

export const s3Flags: readonly string[] = s3OptionSpecs.map((s) => s.flag);
export const s3BoolFlags: readonly string[] = s3OptionSpecs.filter((s) => s.kind === 'bool').map((s) => s.flag);

/** k3s's etcd-snapshot command also takes `--s3-bucket` for `--etcd-s3-bucket` (and `--s3` for `--etcd-s3`). */
export function s3FlagOf(name: string): string | undefined {
  if (s3Flags.includes(name)) return name;
  const long = `etcd-${name}`;
  return name.startsWith('s3') && s3Flags.includes(long) ? long : undefined;
}

export class S3OptionError extends Error {}

/**
 * The options when `--etcd-s3` is on, else undefined. `get(flag)` is the flag's text or undefined when not
 * given (defaults are k3s's); the keys fall back to AWS's environment variables, as k3s's client does.
 */
export function s3OptionsOf(get: (flag: string) => string | undefined, env: Readonly<Record<string, string | undefined>>): S3Options | undefined {
  const text = (flag: string): string => get(flag) ?? s3OptionSpecs.find((s) => s.flag === flag)!.default;
  const bool = (flag: string): boolean => {
    const v = text(flag).trim().toLowerCase();
    if (v === 'true' || v === '1') return true;
    if (v === 'false' || v === '0' || v === '') return false;
    throw new S3OptionError(`invalid value ${JSON.stringify(v)} for --${flag}: expected true or false`);
  };
  if (!bool('etcd-s3')) return undefined;
  const bucket = text('etcd-s3-bucket').trim();
  if (bucket === '') throw new S3OptionError('--etcd-s3-bucket is required with --etcd-s3 (k3s: "s3 bucket name was not set")');
  const proxy = text('etcd-s3-proxy').trim();
  if (proxy !== '' && !isProxyUrl(proxy)) throw new S3OptionError(`invalid value ${JSON.stringify(proxy)} for --etcd-s3-proxy: expected a URL such as http://proxy.example:3128`);
  const endpoint = text('etcd-s3-endpoint').trim().replace(/^https?:\/\//, '').replace(/\/+$/, '');
  if (endpoint === '') throw new S3OptionError('--etcd-s3-endpoint must not be empty');
  const timeoutMs = parseDurationMs(text('etcd-s3-timeout').trim()) ?? Number.NaN;
  if (!(timeoutMs > 0)) throw new S3OptionError(`invalid value ${JSON.stringify(text('etcd-s3-timeout'))} for --etcd-s3-timeout: expected a duration like 5m0s`);
  const ca = text('etcd-s3-endpoint-ca').trim();
  return {
    endpoint,
    ...(ca !== '' ? { endpointCa: ca } : {}),
    skipSslVerify: bool('etcd-s3-skip-ssl-verify'),
    insecure: bool('etcd-s3-insecure'),
    accessKey: nonEmpty(get('etcd-s3-access-key')) ?? env.AWS_ACCESS_KEY_ID ?? '',
    secretKey: nonEmpty(get('etcd-s3-secret-key')) ?? env.AWS_SECRET_ACCESS_KEY ?? '',
    bucket,
    region: text('etcd-s3-region').trim() || 'us-east-1',
    folder: text('etcd-s3-folder').trim().replace(/^\/+|\/+$/g, ''),
    timeoutMs: Number.isFinite(timeoutMs) ? timeoutMs : s3TimeoutMsDefault,
    ...(proxy !== '' ? { proxy } : {}),
  };
}

/** What a proxy URL must be: http or https, with a host (k3s refuses what Go's url.Parse cannot read). */
function isProxyUrl(text: string): boolean {
  try {
    const u = new URL(text);
    return (u.protocol === 'http:' || u.protocol === 'https:') && u.hostname !== '';
  } catch {
    return false;
  }
}

function nonEmpty(v: string | undefined): string | undefined {
  return v === undefined || v === '' ? undefined : v;
}
