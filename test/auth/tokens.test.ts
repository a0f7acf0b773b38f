import { generateKeyPairSync } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { ManualClock } from '../../src/base/clock.js';
import { JwtTokens } from '../../src/node/access/jwt-tokens.js';
import { SimpleTokens } from '../../src/node/access/simple-tokens.js';
import { createTokenProvider } from '../../src/node/access/token-provider.js';

const dir = mkdtempSync(join(tmpdir(), 'etcetera-jwt-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

function keyFiles(name: string, type: 'rsa' | 'ec' | 'ed25519'): { priv: string; pub: string } {
  const pair = type === 'rsa'
    ? generateKeyPairSync('rsa', { modulusLength: 2048 })
    : type === 'ec' ? generateKeyPairSync('ec', { namedCurve: 'P-256' }) : generateKeyPairSync('ed25519');
  const priv = join(dir, `${name}.key`);
  const pub = join(dir, `${name}.pub`);
  writeFileSync(priv, pair.privateKey.export({ type: 'pkcs8', format: 'pem' }));
  writeFileSync(pub, pair.publicKey.export({ type: 'spki', format: 'pem' }));
  return { priv, pub };
}

describe('simple tokens', () => {
  it('name the user for the TTL after their last use, then expire', () => {
    const clock = new ManualClock();
    const t = new SimpleTokens({ ttlMs: 1000, clock });
    t.enabledChanged(true);
    t.authenticated('alice', 'abcdefghijklmnop', 7);
    const token = SimpleTokens.token('abcdefghijklmnop', 7);
    expect(token).toBe('abcdefghijklmnop.7');
    clock.advance(900);
    expect(t.user(token)).toBe('alice');
    clock.advance(900); // 1800 after login, 900 after the last use
    expect(t.user(token)).toBe('alice');
    clock.advance(1000);
    expect(t.user(token)).toBeUndefined();
    expect(t.size).toBe(0);
  });

  it('are dropped when auth is disabled and when their user is invalidated; none are kept while disabled', () => {
    const t = new SimpleTokens({ ttlMs: 1000, clock: new ManualClock() });
    t.authenticated('alice', 'p', 1);
    expect(t.size).toBe(0);
    t.enabledChanged(true);
    t.authenticated('alice', 'p', 1);
    t.authenticated('bob', 'q', 2);
    t.userInvalidated('alice');
    expect([t.user('p.1'), t.user('q.2')]).toEqual([undefined, 'bob']);
    t.enabledChanged(false);
    expect(t.user('q.2')).toBeUndefined();
  });

  it('draw 16-letter prefixes and parse the index of well-formed tokens only', () => {
    expect(SimpleTokens.genPrefix()).toMatch(/^[a-zA-Z]{16}$/);
    expect(SimpleTokens.genPrefix()).not.toBe(SimpleTokens.genPrefix());
    expect(SimpleTokens.indexOf('abc.12')).toBe(12);
    for (const bad of ['abc', 'a.b.c', 'abc.', 'abc.1x', 'abc.-1']) expect(SimpleTokens.indexOf(bad)).toBeUndefined();
  });
});

describe('JWT tokens', () => {
  const now = 1_800_000_000_000;
  for (const [method, type] of [['RS256', 'rsa'], ['PS384', 'rsa'], ['ES256', 'ec'], ['EdDSA', 'ed25519']] as const) {
    it(`${method}: sign, verify, refuse a tampered token, a foreign key and an expired token`, () => {
      const k = keyFiles(method, type);
      const jwt = new JwtTokens({ signMethod: method, privKeyFile: k.priv, pubKeyFile: k.pub, ttlMs: 60_000 });
      const token = jwt.sign('alice', 5, now);
      const [h, c] = token.split('.') as [string, string];
      expect(JSON.parse(Buffer.from(h, 'base64url').toString())).toEqual({ alg: method, typ: 'JWT' });
      expect(JSON.parse(Buffer.from(c, 'base64url').toString())).toEqual({ exp: now / 1000 + 60, revision: 5, username: 'alice' });
      expect(jwt.info(token, now)).toEqual({ username: 'alice', revision: 5 });
      const forged = `${h}.${Buffer.from(JSON.stringify({ exp: now / 1000 + 60, revision: 5, username: 'root' })).toString('base64url')}.${token.split('.')[2]}`;
      expect(jwt.info(forged, now)).toBeUndefined();
      expect(jwt.info(token, now + 60_000)).toBeUndefined();
      const other = keyFiles(`${method}-other`, type);
      expect(new JwtTokens({ signMethod: method, pubKeyFile: other.pub, ttlMs: 1 }).info(token, now)).toBeUndefined();
      const verifier = new JwtTokens({ signMethod: method, pubKeyFile: k.pub, ttlMs: 1 });
      expect([verifier.canSign, verifier.info(token, now)]).toEqual([false, { username: 'alice', revision: 5 }]);
    });
  }

  it('HS256 signs with the shared secret file', () => {
    const secret = join(dir, 'secret');
    writeFileSync(secret, 'a shared secret');
    const jwt = new JwtTokens({ signMethod: 'HS256', privKeyFile: secret, ttlMs: 1000 });
    expect(jwt.info(jwt.sign('u', 1, now), now)).toEqual({ username: 'u', revision: 1 });
    expect(jwt.info('not.a.token', now)).toBeUndefined();
  });
});

describe('--auth-token', () => {
  const o = { ttlSeconds: 300, clock: new ManualClock(), wallClockMs: () => 0 };
  it('accepts simple and jwt with etcd\'s options', () => {
    const k = keyFiles('opt', 'rsa');
    expect(createTokenProvider('simple', o).kind).toBe('simple');
    expect(createTokenProvider(`jwt,pub-key=${k.pub},priv-key=${k.priv},sign-method=RS256,ttl=10m`, o).kind).toBe('jwt');
  });

  it('refuses unknown types, unknown or malformed options and a jwt without sign-method', () => {
    const k = keyFiles('bad', 'rsa');
    for (const bad of ['plain', 'simple,ttl=5m', `jwt,pub-key=${k.pub}`, `jwt,priv-key=${k.priv},sign-method=RS999`, 'jwt,sign-method', `jwt,priv-key=${k.priv},sign-method=RS256,colour=red`]) {
      expect(() => createTokenProvider(bad, o), bad).toThrow(/auth-token/);
    }
  });

  it('refuses a jwt ttl that is not a positive Go duration (the grammar: test/config/duration.test.ts)', () => {
    const k = keyFiles('ttl', 'rsa');
    for (const bad of ['', '5', 'm', '5x', '-1s', '0']) {
      expect(() => createTokenProvider(`jwt,priv-key=${k.priv},pub-key=${k.pub},sign-method=RS256,ttl=${bad}`, o), bad).toThrow(/auth-token: invalid duration/);
    }
  });
});
