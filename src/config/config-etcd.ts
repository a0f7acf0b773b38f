/**
 * The etcd options beyond the basics: TLS policy (cipher suites, versions, CRLs), auto TLS, gRPC limits,
 * auth, log outputs, and the notices and refusals of the etcd flags that have no effect here. Messages use
 * etcd's wording where etcd has the same check.
 */
import { accessSync, constants } from 'node:fs';
import { requestBytesLimitMax, subRevisionsMax } from '../base/index.js';
import { optionSpecs } from './config-options.js';
import { ConfigError } from './config-sources.js';
import type { Typed } from './config-typed.js';
import type { AuthOptions, AutoTls, GrpcLimits, TlsPolicy } from './member-options.js';

/** Go's crypto/tls suite names (what etcd's --cipher-suites takes) → OpenSSL's names (what Node takes). */
const goToOpenSsl: Record<string, string> = {
  TLS_RSA_WITH_RC4_128_SHA: 'RC4-SHA',
  TLS_RSA_WITH_3DES_EDE_CBC_SHA: 'DES-CBC3-SHA',
  TLS_RSA_WITH_AES_128_CBC_SHA: 'AES128-SHA',
  TLS_RSA_WITH_AES_256_CBC_SHA: 'AES256-SHA',
  TLS_RSA_WITH_AES_128_CBC_SHA256: 'AES128-SHA256',
  TLS_RSA_WITH_AES_128_GCM_SHA256: 'AES128-GCM-SHA256',
  TLS_RSA_WITH_AES_256_GCM_SHA384: 'AES256-GCM-SHA384',
  TLS_ECDHE_ECDSA_WITH_RC4_128_SHA: 'ECDHE-ECDSA-RC4-SHA',
  TLS_ECDHE_ECDSA_WITH_AES_128_CBC_SHA: 'ECDHE-ECDSA-AES128-SHA',
  TLS_ECDHE_ECDSA_WITH_AES_256_CBC_SHA: 'ECDHE-ECDSA-AES256-SHA',
  TLS_ECDHE_RSA_WITH_RC4_128_SHA: 'ECDHE-RSA-RC4-SHA',
  TLS_ECDHE_RSA_WITH_3DES_EDE_CBC_SHA: 'ECDHE-RSA-DES-CBC3-SHA',
  TLS_ECDHE_RSA_WITH_AES_128_CBC_SHA: 'ECDHE-RSA-AES128-SHA',
  TLS_ECDHE_RSA_WITH_AES_256_CBC_SHA: 'ECDHE-RSA-AES256-SHA',
  TLS_ECDHE_ECDSA_WITH_AES_128_CBC_SHA256: 'ECDHE-ECDSA-AES128-SHA256',
  TLS_ECDHE_RSA_WITH_AES_128_CBC_SHA256: 'ECDHE-RSA-AES128-SHA256',
  TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256: 'ECDHE-RSA-AES128-GCM-SHA256',
  TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256: 'ECDHE-ECDSA-AES128-GCM-SHA256',
  TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384: 'ECDHE-RSA-AES256-GCM-SHA384',
  TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384: 'ECDHE-ECDSA-AES256-GCM-SHA384',
  TLS_ECDHE_RSA_WITH_CHACHA20_POLY1305: 'ECDHE-RSA-CHACHA20-POLY1305',
  TLS_ECDHE_RSA_WITH_CHACHA20_POLY1305_SHA256: 'ECDHE-RSA-CHACHA20-POLY1305',
  TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305: 'ECDHE-ECDSA-CHACHA20-POLY1305',
  TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305_SHA256: 'ECDHE-ECDSA-CHACHA20-POLY1305',
  // TLS 1.3 suites have the same names in both.
  TLS_AES_128_GCM_SHA256: 'TLS_AES_128_GCM_SHA256',
  TLS_AES_256_GCM_SHA384: 'TLS_AES_256_GCM_SHA384',
  TLS_CHACHA20_POLY1305_SHA256: 'TLS_CHACHA20_POLY1305_SHA256',
};

const tlsVersions = { 'TLS1.2': 'TLSv1.2', 'TLS1.3': 'TLSv1.3' } as const;

export function buildTlsPolicy(o: Typed): TlsPolicy {
  const min = o.enumValue<'TLS1.2' | 'TLS1.3'>('tls-min-version');
  const maxText = o.enumValue<'' | 'TLS1.2' | 'TLS1.3'>('tls-max-version');
  if (maxText === 'TLS1.2' && min === 'TLS1.3') throw new ConfigError(`min version (${min}) is greater than max version (${maxText})`);
  const suites = o.list('cipher-suites');
  if (suites.length > 0 && min === 'TLS1.3') throw new ConfigError('cipher suites cannot be configured when only TLS1.3 is enabled');
  const ciphers = suites.map((s) => {
    const name = goToOpenSsl[s];
    if (name === undefined) throw new ConfigError(`unexpected TLS cipher suite ${JSON.stringify(s)} in --cipher-suites`);
    return name;
  });
  return {
    minVersion: tlsVersions[min],
    ...(maxText !== '' ? { maxVersion: tlsVersions[maxText] } : {}),
    ...(ciphers.length > 0 ? { ciphers: [...new Set(ciphers)].join(':') } : {}),
  };
}

/** A CRL file is checked for readability here; it is parsed when the listener starts. */
export function crlFileOf(o: Typed, flag: 'client-crl-file' | 'peer-crl-file', hasTls: boolean): string | undefined {
  const path = o.string(flag);
  if (path === '') return undefined;
  if (!hasTls) throw new ConfigError(`--${flag} needs TLS (${flag === 'client-crl-file' ? '--cert-file/--key-file or --auto-tls' : '--peer-cert-file/--peer-key-file or --peer-auto-tls'})`);
  try {
    accessSync(path, constants.R_OK);
  } catch (err) {
    throw new ConfigError(`cannot read --${flag} ${path}: ${(err as NodeJS.ErrnoException).code ?? (err as Error).message}`);
  }
  return path;
}

export function buildAutoTls(o: Typed, haveClientCerts: boolean, havePeerCerts: boolean, warnings: string[]): AutoTls | undefined {
  const client = o.bool('auto-tls');
  const peer = o.bool('peer-auto-tls');
  if (client && haveClientCerts) warnings.push('ignoring client auto TLS since certs given');
  if (peer && havePeerCerts) warnings.push('ignoring peer auto TLS since certs given');
  const validityYears = o.uint('self-signed-cert-validity');
  if ((client || peer) && validityYears === 0) throw new ConfigError('selfSignedCertValidity is invalid,it should be greater than 0');
  if (!(client && !haveClientCerts) && !(peer && !havePeerCerts)) return undefined;
  return { client: client && !haveClientCerts, peer: peer && !havePeerCerts, validityYears };
}

export function buildGrpcLimits(o: Typed, warnings: string[]): GrpcLimits {
  const requestBytesMax = o.uint('max-request-bytes');
  if (requestBytesMax < 1) throw new ConfigError('--max-request-bytes must be at least 1');
  if (requestBytesMax > requestBytesLimitMax) {
    throw new ConfigError(`--max-request-bytes ${requestBytesMax} is above the largest request this log format carries (${requestBytesLimitMax})`);
  }
  // etcd's warning, word for word.
  if (requestBytesMax > 10 * 1024 * 1024) warnings.push(`exceeded recommended request limit: --max-request-bytes ${requestBytesMax}`);
  const txnOpsMax = o.uint('max-txn-ops');
  if (txnOpsMax < 1) throw new ConfigError('--max-txn-ops must be at least 1');
  // Every op of a txn takes a sub-revision of the txn's revision, and those are bounded.
  if (txnOpsMax >= subRevisionsMax) throw new ConfigError(`--max-txn-ops ${txnOpsMax} must be below ${subRevisionsMax}`);
  const concurrentStreamsMax = o.uint('max-concurrent-streams');
  if (concurrentStreamsMax < 1 || concurrentStreamsMax > 2 ** 32 - 1) throw new ConfigError('--max-concurrent-streams must be between 1 and 4294967295');
  return {
    requestBytesMax,
    txnOpsMax,
    concurrentStreamsMax,
    keepAliveMinTimeMs: o.durationMs('grpc-keepalive-min-time'),
    keepAliveIntervalMs: o.durationMs('grpc-keepalive-interval'),
    keepAliveTimeoutMs: o.durationMs('grpc-keepalive-timeout'),
  };
}

export function buildAuth(o: Typed): AuthOptions {
  const token = o.string('auth-token');
  const kind = token.split(',')[0];
  if (kind !== 'simple' && kind !== 'jwt') throw new ConfigError(`unknown token type ${JSON.stringify(kind)} in --auth-token (want simple or jwt,…)`);
  const bcryptCost = o.uint('bcrypt-cost');
  // bcrypt's MinCost and MaxCost, which etcd checks.
  if (bcryptCost < 4 || bcryptCost > 31) throw new ConfigError(`invalid bcrypt-cost: ${bcryptCost}, it should be between 4 and 31`);
  return { token, bcryptCost, tokenTtlSeconds: o.uint('auth-token-ttl') };
}

/** 'default' is stderr, as etcd outside systemd; under systemd, stderr reaches the journal too. Files are appended to. */
export function buildLogOutputs(o: Typed): string[] {
  const outputs = o.list('log-outputs').map((x) => (x === 'default' || x === 'journal' ? 'stderr' : x));
  return outputs.length === 0 ? ['stderr'] : [...new Set(outputs)];
}

/** The notice of every no-effect etcd flag that was set; the refusal of a refused one. */
export function etcdFlagNotices(o: Typed): string[] {
  const notices: string[] = [];
  for (const flag of o.given()) {
    const spec = optionSpecs.get(flag)!;
    if (spec.refuse !== undefined && o.string(flag).trim() !== '') throw new ConfigError(spec.refuse);
    if (spec.notice !== undefined) notices.push(`--${flag}: ${spec.notice}`);
  }
  return notices;
}
