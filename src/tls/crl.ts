/**
 * Certificate revocation lists as etcd applies them (client/pkg/transport/listener.go, checkCRL): a connection
 * is refused when a certificate it presented has a serial number the list revokes, and a list updated on disk
 * counts without a restart. etcd reads the file for every accepted connection; CrlFile looks at its stat at
 * most once a second (crlStatIntervalMs) and reads it again only when that changed. Nothing else of the list counts: not its signature, not its issuer,
 * not its dates. OpenSSL's own CRL check (Node's `crl` option) also demands a current list, so with etcd's
 * fixture (integration/fixtures/revoke.crl, next update 2021) it refused every certificate ("CRL_HAS_EXPIRED"),
 * the valid ones included (etcd's TestCtlV3GetRevokedCRL).
 *
 * The file is PEM or DER, as Go's x509.ParseCRL takes either. Only the revoked serial numbers are read:
 *
 *   CertificateList ::= SEQUENCE { tbsCertList, signatureAlgorithm, signatureValue }
 *   tbsCertList     ::= SEQUENCE { version INTEGER OPTIONAL, signature, issuer, thisUpdate Time,
 *                                  nextUpdate Time OPTIONAL, revokedCertificates SEQUENCE OF SEQUENCE {
 *                                  userCertificate INTEGER, revocationDate Time, extensions OPTIONAL } OPTIONAL,
 *                                  crlExtensions [0] OPTIONAL }
 */
import { readFileSync, statSync } from 'node:fs';
import { crlStatIntervalMs } from '../base/limits.js';

const tagInteger = 0x02;
const tagSequence = 0x30;
const tagUtcTime = 0x17;
const tagGeneralizedTime = 0x18;

export class CrlError extends Error {
  override name = 'CrlError';
}

interface Tlv {
  tag: number;
  /** The content's bytes. */
  body: Uint8Array;
  /** Offset just past this element in the buffer it was read from. */
  end: number;
}

function readTlv(b: Uint8Array, at: number): Tlv {
  if (at + 2 > b.length) throw new CrlError('truncated DER element');
  const tag = b[at]!;
  let length = b[at + 1]!;
  let start = at + 2;
  if (length & 0x80) {
    const bytes = length & 0x7f;
    if (bytes === 0 || bytes > 4 || start + bytes > b.length) throw new CrlError('bad DER length');
    length = 0;
    for (let i = 0; i < bytes; i++) length = length * 256 + b[start + i]!;
    start += bytes;
  }
  if (start + length > b.length) throw new CrlError('DER element runs past its parent');
  return { tag, body: b.subarray(start, start + length), end: start + length };
}

function children(body: Uint8Array): Tlv[] {
  const out: Tlv[] = [];
  for (let at = 0; at < body.length; ) {
    const e = readTlv(body, at);
    out.push(e);
    at = e.end;
  }
  return out;
}

/** A serial number as Go's `%x` of SerialNumber.Bytes() prints it: lowercase hex, no leading zero bytes. */
export function serialHex(bytes: Uint8Array | string): string {
  const hex = typeof bytes === 'string' ? bytes.toLowerCase() : Buffer.from(bytes).toString('hex');
  const trimmed = hex.replace(/^(00)+/, '');
  return trimmed.length % 2 === 1 ? `0${trimmed}` : trimmed;
}

function derOf(file: Uint8Array): Uint8Array {
  const text = Buffer.from(file.subarray(0, 64)).toString('latin1');
  if (!text.includes('-----BEGIN')) return file;
  const pem = /-----BEGIN X509 CRL-----([\s\S]*?)-----END X509 CRL-----/.exec(Buffer.from(file).toString('latin1'));
  if (pem === null) throw new CrlError('no "X509 CRL" block in the PEM file');
  return Buffer.from(pem[1]!.replace(/\s+/g, ''), 'base64');
}

/** The serial numbers a CRL (PEM or DER bytes) revokes, as serialHex gives them. */
export function revokedSerials(file: Uint8Array): Set<string> {
  const list = readTlv(derOf(file), 0);
  if (list.tag !== tagSequence) throw new CrlError('not a CRL (no outer SEQUENCE)');
  const tbs = children(list.body)[0];
  if (tbs === undefined || tbs.tag !== tagSequence) throw new CrlError('not a CRL (no tbsCertList)');
  const fields = children(tbs.body);
  let i = fields[0]?.tag === tagInteger ? 1 : 0; // version
  i += 2; // signature algorithm, issuer
  const isTime = (e: Tlv | undefined): boolean => e !== undefined && (e.tag === tagUtcTime || e.tag === tagGeneralizedTime);
  if (!isTime(fields[i])) throw new CrlError('not a CRL (no thisUpdate)');
  i++;
  if (isTime(fields[i])) i++; // nextUpdate
  const out = new Set<string>();
  const revoked = fields[i];
  if (revoked === undefined || revoked.tag !== tagSequence) return out; // none revoked (or only extensions)
  for (const entry of children(revoked.body)) {
    const serial = entry.tag === tagSequence ? children(entry.body)[0] : undefined;
    if (serial === undefined || serial.tag !== tagInteger) throw new CrlError('a revoked entry without a serial number');
    out.add(serialHex(serial.body));
  }
  return out;
}

/** Read and parse `path` (at a listener's start, so a bad file stops the start). */
export function readRevokedSerials(path: string): Set<string> {
  return parsedAt(path, readFileSync(path));
}

function parsedAt(path: string, file: Uint8Array): Set<string> {
  try {
    return revokedSerials(file);
  } catch (err) {
    if (err instanceof CrlError) throw new CrlError(`${path}: ${err.message}`);
    throw err;
  }
}

/** What CrlFile asks of the file system and the clock (tests count reads and move time). */
export interface CrlFilePorts {
  /** A text that changes when the file is replaced or written (inode, size, modification and change times). */
  version(path: string): string;
  read(path: string): Uint8Array;
  nowMs(): number;
}

const nodePorts: CrlFilePorts = {
  version(path) {
    const s = statSync(path, { bigint: true });
    return `${s.dev}:${s.ino}:${s.size}:${s.mtimeNs}:${s.ctimeNs}`;
  },
  read: (path) => readFileSync(path),
  nowMs: () => performance.now(),
};

/** A CRL file's revoked serials, read again when the file changed (looked at once per crlStatIntervalMs). */
export class CrlFile {
  readonly path: string;
  readonly #ports: CrlFilePorts;
  #checkedAtMs = -Infinity;
  /** The version the serials (or the error) were read at; undefined after a failure, so the next look reads. */
  #version: string | undefined;
  #serials: ReadonlySet<string> = new Set();
  #error: unknown;

  constructor(path: string, ports: CrlFilePorts = nodePorts) {
    this.path = path;
    this.#ports = ports;
  }

  /** The serials the file revokes now; throws what reading or parsing it threw (the connection is refused). */
  revoked(): ReadonlySet<string> {
    const now = this.#ports.nowMs();
    if (now - this.#checkedAtMs >= crlStatIntervalMs) {
      this.#checkedAtMs = now;
      this.#refresh();
    }
    if (this.#error !== undefined) throw this.#error;
    return this.#serials;
  }

  #refresh(): void {
    try {
      // The version before the contents: a write between the two is then seen at the next look.
      const version = this.#ports.version(this.path);
      if (version === this.#version) return;
      this.#serials = parsedAt(this.path, this.#ports.read(this.path));
      this.#version = version;
      this.#error = undefined;
    } catch (err) {
      this.#version = undefined;
      this.#error = err;
    }
  }
}

/** One CrlFile per path for the process: every listener and connection checking the same file shares its reads. */
const crlFiles = new Map<string, CrlFile>();

export function crlFileAt(path: string): CrlFile {
  let file = crlFiles.get(path);
  if (file === undefined) crlFiles.set(path, (file = new CrlFile(path)));
  return file;
}

/** The chain a client presented, leaf first, each with its serial (Node's uppercase hex), up to a self-signed CA. */
export interface PresentedCertificate {
  serialNumber: string;
  issuerCertificate?: PresentedCertificate;
}

/** etcd's refusal when a presented certificate is revoked; undefined when none is. */
export function revocation(chain: PresentedCertificate, revoked: ReadonlySet<string>): string | undefined {
  const seen = new Set<PresentedCertificate>();
  for (let c: PresentedCertificate | undefined = chain; c !== undefined && !seen.has(c); c = c.issuerCertificate) {
    seen.add(c);
    const serial = serialHex(c.serialNumber);
    if (revoked.has(serial)) return `transport: certificate serial ${serial} revoked`;
  }
  return undefined;
}
