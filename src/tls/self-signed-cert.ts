/**
 * Self-signed certificates for --auto-tls and --peer-auto-tls, as etcd's transport.SelfCert makes them:
 * an ECDSA P-521 key, subject O=etcd, valid from now for `validityYears` × 365 days, key usage
 * digitalSignature + keyEncipherment, extended usage serverAuth (+ clientAuth for peers, which present it
 * when they dial), the listen hosts as IP or DNS subject alternative names, signed with ecdsa-with-SHA512.
 * Node can parse certificates but not build them, so the DER is written here (a few fixed structures).
 */
import { generateKeyPairSync, randomBytes, sign, type KeyObject } from 'node:crypto';
import { isIP } from 'node:net';

export interface SelfSignedOptions {
  hosts: readonly string[];
  validityYears: number;
  clientAuth: boolean;
  /** Default: now (tests pin it). */
  notBefore?: Date;
}

export interface PemPair {
  certPem: string;
  keyPem: string;
}

export function selfSignedCert(o: SelfSignedOptions): PemPair {
  const { privateKey, publicKey } = generateKeyPairSync('ec', { namedCurve: 'P-521' });
  const notBefore = o.notBefore ?? new Date();
  const notAfter = new Date(notBefore.getTime() + o.validityYears * 365 * 24 * 3600 * 1000);
  const tbs = tbsCertificate(publicKey.export({ type: 'spki', format: 'der' }), notBefore, notAfter, o);
  const signature = sign('sha512', tbs, privateKey);
  const der = seq(tbs, seq(oid(ecdsaWithSha512)), bitString(signature));
  return { certPem: pem('CERTIFICATE', der), keyPem: sec1Pem(privateKey) };
}

const ecdsaWithSha512 = '1.2.840.10045.4.3.4';
const organization = '2.5.4.10';
const extKeyUsage = '2.5.29.37';
const keyUsage = '2.5.29.15';
const basicConstraints = '2.5.29.19';
const subjectAltName = '2.5.29.17';
const serverAuth = '1.3.6.1.5.5.7.3.1';
const clientAuth = '1.3.6.1.5.5.7.3.2';

function tbsCertificate(spki: Buffer, notBefore: Date, notAfter: Date, o: SelfSignedOptions): Buffer {
  const serial = randomBytes(16);
  const name = seq(set(seq(oid(organization), tlv(0x0c, Buffer.from('etcd', 'utf8')))));
  const usages = [serverAuth, ...(o.clientAuth ? [clientAuth] : [])];
  const extensions = [
    extension(keyUsage, true, bitString(Buffer.from([0xa0]), 5)), // digitalSignature (bit 0), keyEncipherment (bit 2)
    extension(extKeyUsage, false, seq(...usages.map(oid))),
    extension(basicConstraints, true, seq()),
    ...(o.hosts.length > 0 ? [extension(subjectAltName, false, seq(...o.hosts.map(altName)))] : []),
  ];
  return seq(
    tlv(0xa0, integer(Buffer.from([2]))), // v3
    integer(serial),
    seq(oid(ecdsaWithSha512)),
    name,
    seq(time(notBefore), time(notAfter)),
    name,
    spki,
    tlv(0xa3, seq(...extensions)),
  );
}

function altName(host: string): Buffer {
  const kind = isIP(host);
  if (kind === 4) return tlv(0x87, Buffer.from(host.split('.').map(Number)));
  if (kind === 6) return tlv(0x87, ipv6Bytes(host));
  return tlv(0x82, Buffer.from(host, 'ascii'));
}

function ipv6Bytes(host: string): Buffer {
  const [head = '', tail] = host.split('::');
  const parts = (s: string): string[] => (s === '' ? [] : s.split(':'));
  const h = parts(head);
  const t = tail === undefined ? [] : parts(tail);
  const groups = [...h, ...Array<string>(8 - h.length - t.length).fill('0'), ...t];
  const out = Buffer.alloc(16);
  groups.forEach((g, i) => out.writeUInt16BE(parseInt(g, 16), 2 * i));
  return out;
}

function extension(id: string, critical: boolean, value: Buffer): Buffer {
  return seq(oid(id), ...(critical ? [tlv(0x01, Buffer.from([0xff]))] : []), tlv(0x04, value));
}

/** UTCTime until 2049, GeneralizedTime after (RFC 5280 4.1.2.5). */
function time(d: Date): Buffer {
  const iso = d.toISOString().replace(/[-:T]/g, '').slice(0, 14); // YYYYMMDDHHMMSS
  return d.getUTCFullYear() < 2050 ? tlv(0x17, Buffer.from(`${iso.slice(2)}Z`)) : tlv(0x18, Buffer.from(`${iso}Z`));
}

function integer(bytes: Buffer): Buffer {
  let b = bytes;
  while (b.length > 1 && b[0] === 0 && (b[1] as number) < 0x80) b = b.subarray(1);
  return tlv(0x02, (b[0] as number) >= 0x80 ? Buffer.concat([Buffer.from([0]), b]) : b);
}

function bitString(bytes: Buffer, unusedBits = 0): Buffer {
  return tlv(0x03, Buffer.concat([Buffer.from([unusedBits]), bytes]));
}

function oid(dotted: string): Buffer {
  const [a, b, ...rest] = dotted.split('.').map(Number) as [number, number, ...number[]];
  const out = [40 * a + b];
  for (const n of rest) {
    const base128 = [n & 0x7f];
    for (let v = n >>> 7; v > 0; v >>>= 7) base128.unshift((v & 0x7f) | 0x80);
    out.push(...base128);
  }
  return tlv(0x06, Buffer.from(out));
}

const seq = (...items: Buffer[]): Buffer => tlv(0x30, Buffer.concat(items));
const set = (...items: Buffer[]): Buffer => tlv(0x31, Buffer.concat(items));

function tlv(tag: number, value: Buffer): Buffer {
  const n = value.length;
  let length: number[];
  if (n < 0x80) length = [n];
  else {
    const bytes: number[] = [];
    for (let v = n; v > 0; v >>>= 8) bytes.unshift(v & 0xff);
    length = [0x80 | bytes.length, ...bytes];
  }
  return Buffer.concat([Buffer.from([tag, ...length]), value]);
}

function pem(label: string, der: Buffer): string {
  const lines = der.toString('base64').match(/.{1,64}/g) ?? [];
  return `-----BEGIN ${label}-----\n${lines.join('\n')}\n-----END ${label}-----\n`;
}

/** "EC PRIVATE KEY" (SEC 1), the form etcd writes with x509.MarshalECPrivateKey. */
function sec1Pem(key: KeyObject): string {
  return key.export({ type: 'sec1', format: 'pem' }) as string;
}
