/**
 * etcd's JWT token provider (server/auth/jwt.go): `--auth-token jwt,pub-key=…,priv-key=…,sign-method=…[,ttl=…]`.
 * A token is a signed JWT with the claims { username, revision, exp }: any member holding the public key can
 * check it without shared state, and the revision it was issued at travels with it (a token from before an
 * auth change is refused as "revision of auth store is old"). Signing happens at the request edge after the
 * Authenticate entry applied, never in apply. Node's crypto does every algorithm etcd offers.
 */
import { constants, createHmac, createPrivateKey, createPublicKey, sign, timingSafeEqual, verify, type KeyObject } from 'node:crypto';
import { readFileSync } from 'node:fs';
import type { AuthInfo } from '../../auth/types.js';

type Family = 'RS' | 'PS' | 'ES' | 'HS' | 'EdDSA';

const methods: Record<string, { family: Family; hash: string | null }> = {
  RS256: { family: 'RS', hash: 'sha256' }, RS384: { family: 'RS', hash: 'sha384' }, RS512: { family: 'RS', hash: 'sha512' },
  PS256: { family: 'PS', hash: 'sha256' }, PS384: { family: 'PS', hash: 'sha384' }, PS512: { family: 'PS', hash: 'sha512' },
  ES256: { family: 'ES', hash: 'sha256' }, ES384: { family: 'ES', hash: 'sha384' }, ES512: { family: 'ES', hash: 'sha512' },
  HS256: { family: 'HS', hash: 'sha256' }, HS384: { family: 'HS', hash: 'sha384' }, HS512: { family: 'HS', hash: 'sha512' },
  EdDSA: { family: 'EdDSA', hash: null },
};

export interface JwtOptions {
  signMethod: string;
  /** PEM paths (HS*: one secret file, either option). A member without the private key only verifies. */
  privKeyFile?: string;
  pubKeyFile?: string;
  ttlMs: number;
}

const b64url = (b: Buffer | string): string => Buffer.from(b).toString('base64url');

export class JwtTokens {
  readonly #method: string;
  readonly #family: Family;
  readonly #hash: string | null;
  readonly #ttlMs: number;
  readonly #signKey: KeyObject | Buffer | undefined;
  readonly #verifyKey: KeyObject | Buffer;

  constructor(o: JwtOptions) {
    const m = methods[o.signMethod];
    if (m === undefined) throw new Error(`auth-token: unknown jwt sign-method ${JSON.stringify(o.signMethod)}`);
    this.#method = o.signMethod;
    this.#family = m.family;
    this.#hash = m.hash;
    this.#ttlMs = o.ttlMs;
    if (m.family === 'HS') {
      const file = o.privKeyFile ?? o.pubKeyFile;
      if (file === undefined) throw new Error('auth-token: jwt HS* needs priv-key (the shared secret)');
      this.#signKey = this.#verifyKey = readFileSync(file);
      return;
    }
    const priv = o.privKeyFile !== undefined ? createPrivateKey(readFileSync(o.privKeyFile)) : undefined;
    const pub = o.pubKeyFile !== undefined ? createPublicKey(readFileSync(o.pubKeyFile)) : priv !== undefined ? createPublicKey(priv) : undefined;
    if (pub === undefined) throw new Error('auth-token: jwt needs pub-key or priv-key');
    this.#signKey = priv;
    this.#verifyKey = pub;
  }

  get canSign(): boolean {
    return this.#signKey !== undefined;
  }

  sign(username: string, revision: number, nowMs: number): string {
    if (this.#signKey === undefined) throw new Error('auth-token: this member has no jwt priv-key to sign with');
    const header = b64url(JSON.stringify({ alg: this.#method, typ: 'JWT' }));
    const claims = b64url(JSON.stringify({ exp: Math.floor((nowMs + this.#ttlMs) / 1000), revision, username }));
    const input = `${header}.${claims}`;
    return `${input}.${b64url(this.#signature(Buffer.from(input)))}`;
  }

  /** The user and revision of a valid, unexpired token signed with our key; undefined otherwise. */
  info(token: string, nowMs: number): AuthInfo | undefined {
    const parts = token.split('.');
    if (parts.length !== 3) return undefined;
    const [h, c, s] = parts as [string, string, string];
    try {
      const header = JSON.parse(Buffer.from(h, 'base64url').toString()) as { alg?: unknown };
      if (header.alg !== this.#method) return undefined;
      if (!this.#verify(Buffer.from(`${h}.${c}`), Buffer.from(s, 'base64url'))) return undefined;
      const claims = JSON.parse(Buffer.from(c, 'base64url').toString()) as { username?: unknown; revision?: unknown; exp?: unknown };
      if (typeof claims.username !== 'string' || typeof claims.revision !== 'number') return undefined;
      if (typeof claims.exp === 'number' && claims.exp * 1000 <= nowMs) return undefined;
      return { username: claims.username, revision: claims.revision };
    } catch {
      return undefined; // malformed base64 or JSON: not a token of ours
    }
  }

  #signature(data: Buffer): Buffer {
    const key = this.#signKey!;
    switch (this.#family) {
      case 'HS':
        return createHmac(this.#hash!, key as Buffer).update(data).digest();
      case 'EdDSA':
        return sign(null, data, key as KeyObject);
      case 'ES':
        return sign(this.#hash, data, { key: key as KeyObject, dsaEncoding: 'ieee-p1363' });
      case 'PS':
        return sign(this.#hash, data, { key: key as KeyObject, padding: constants.RSA_PKCS1_PSS_PADDING, saltLength: constants.RSA_PSS_SALTLEN_DIGEST });
      case 'RS':
        return sign(this.#hash, data, key as KeyObject);
    }
  }

  #verify(data: Buffer, sig: Buffer): boolean {
    const key = this.#verifyKey;
    switch (this.#family) {
      case 'HS': {
        const want = createHmac(this.#hash!, key as Buffer).update(data).digest();
        return want.length === sig.length && timingSafeEqual(want, sig);
      }
      case 'EdDSA':
        return verify(null, data, key as KeyObject, sig);
      case 'ES':
        return verify(this.#hash, data, { key: key as KeyObject, dsaEncoding: 'ieee-p1363' }, sig);
      case 'PS':
        return verify(this.#hash, data, { key: key as KeyObject, padding: constants.RSA_PKCS1_PSS_PADDING, saltLength: constants.RSA_PSS_SALTLEN_AUTO }, sig);
      case 'RS':
        return verify(this.#hash, data, key as KeyObject, sig);
    }
  }
}
