/**
 * k3s's --etcd-s3 options (src/config/s3-options.ts): k3s's names and defaults on the command line, in the
 * config file (etcd-s3-* keys as k3s's config.yaml has them) and through AWS's variables for the keys; the
 * snapshot verbs' shorter --s3-* spellings; an incomplete setup refused by name.
 */
import { describe, expect, it } from 'vitest';
import { ConfigError, parseConfig, type ServerConfig } from '../../src/config/config.js';
import { s3FlagOf, s3OptionsOf } from '../../src/config/s3-options.js';

function config(argv: string[], env: Record<string, string> = {}, yaml?: string): ServerConfig {
  const r = parseConfig({ argv: yaml === undefined ? argv : [...argv, '--config-file', 'k3s.yaml'], env, readFile: () => yaml ?? '' });
  if (r.kind !== 'config') throw new Error('expected a config');
  return r.config;
}

describe('--etcd-s3 options', () => {
  it('are off unless --etcd-s3 is set', () => {
    expect(config(['--etcd-s3-bucket', 'b']).etcdS3).toBeUndefined();
  });

  it("take k3s's defaults: endpoint s3.amazonaws.com, region us-east-1, HTTPS, timeout 5m", () => {
    expect(config(['--etcd-s3', '--etcd-s3-bucket', 'backups']).etcdS3).toEqual({
      endpoint: 's3.amazonaws.com', skipSslVerify: false, insecure: false, accessKey: '', secretKey: '', bucket: 'backups',
      region: 'us-east-1', folder: '', timeoutMs: 300_000,
    });
  });

  it("read a k3s config file's etcd-s3 keys unchanged", () => {
    const yaml = [
      'etcd-s3: true', 'etcd-s3-endpoint: minio.lan:9000', 'etcd-s3-endpoint-ca: /etc/ca.pem', 'etcd-s3-skip-ssl-verify: true',
      'etcd-s3-access-key: AK', 'etcd-s3-secret-key: SK', 'etcd-s3-bucket: k3s', 'etcd-s3-region: eu-west-3',
      'etcd-s3-folder: /board-1/', 'etcd-s3-insecure: false', 'etcd-s3-timeout: 30s', 'etcd-s3-proxy: ""',
    ].join('\n');
    expect(config([], {}, yaml).etcdS3).toEqual({
      endpoint: 'minio.lan:9000', endpointCa: '/etc/ca.pem', skipSslVerify: true, insecure: false, accessKey: 'AK', secretKey: 'SK',
      bucket: 'k3s', region: 'eu-west-3', folder: 'board-1', timeoutMs: 30_000,
    });
  });

  it("accept k3s's etcd-s3-config-secret key with a notice (there is no Secret to read)", () => {
    const r = parseConfig({ argv: ['--etcd-s3-config-secret', 'k3s-etcd-snapshot-s3-config'], env: {} });
    expect(r.kind === 'config' && r.warnings.some((w) => w.startsWith('--etcd-s3-config-secret: ignored'))).toBe(true);
  });

  it('warn that nothing is uploaded when scheduled snapshots are off', () => {
    const r = parseConfig({ argv: ['--etcd-s3', '--etcd-s3-bucket', 'b', '--snapshot-schedule', ''], env: {} });
    expect(r.kind === 'config' && r.warnings.some((w) => w.includes('the member uploads nothing'))).toBe(true);
    const on = parseConfig({ argv: ['--etcd-s3', '--etcd-s3-bucket', 'b'], env: {} });
    expect(on.kind === 'config' && on.warnings.length).toBe(0);
  });

  it('take the keys from AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY when the flags are not given', () => {
    const s3 = config(['--etcd-s3', '--etcd-s3-bucket', 'b'], { AWS_ACCESS_KEY_ID: 'env-ak', AWS_SECRET_ACCESS_KEY: 'env-sk' }).etcdS3!;
    expect([s3.accessKey, s3.secretKey]).toEqual(['env-ak', 'env-sk']);
    const flags = config(['--etcd-s3', '--etcd-s3-bucket', 'b', '--etcd-s3-access-key', 'ak'], { AWS_ACCESS_KEY_ID: 'env-ak' }).etcdS3!;
    expect(flags.accessKey).toBe('ak');
  });

  it('refuse an incomplete or unsupported setup, naming the flag', () => {
    expect(() => config(['--etcd-s3'])).toThrow(ConfigError);
    expect(() => config(['--etcd-s3'])).toThrow('--etcd-s3-bucket is required');
    expect(() => config(['--etcd-s3', '--etcd-s3-bucket', 'b', '--etcd-s3-timeout', 'soon'])).toThrow('--etcd-s3-timeout');
    expect(() => config(['--etcd-s3', '--etcd-s3-bucket', 'b', '--etcd-s3-proxy', 'p:3128'])).toThrow('--etcd-s3-proxy');
    expect(() => config(['--etcd-s3', '--etcd-s3-bucket', 'b', '--etcd-s3-proxy', 'socks5://p:1080'])).toThrow('--etcd-s3-proxy');
  });

  it('take --etcd-s3-proxy for the bucket only, and leave it absent when empty (the environment decides then)', () => {
    expect(config(['--etcd-s3', '--etcd-s3-bucket', 'b', '--etcd-s3-proxy', 'http://p:3128']).etcdS3!.proxy).toBe('http://p:3128');
    expect(config(['--etcd-s3', '--etcd-s3-bucket', 'b']).etcdS3!.proxy).toBeUndefined();
  });

  it("accept k3s etcd-snapshot's --s3-* spellings on the snapshot verbs", () => {
    expect(['s3', 's3-bucket', 's3-access-key', 'etcd-s3-folder', 'bucket'].map(s3FlagOf)).toEqual(['etcd-s3', 'etcd-s3-bucket', 'etcd-s3-access-key', 'etcd-s3-folder', undefined]);
    const flags = new Map([['etcd-s3', 'true'], ['etcd-s3-bucket', 'b'], ['etcd-s3-endpoint', 'http://127.0.0.1:9000/'], ['etcd-s3-insecure', 'true']]);
    expect(s3OptionsOf((f) => flags.get(f), {})).toMatchObject({ endpoint: '127.0.0.1:9000', insecure: true, bucket: 'b' });
  });
});
