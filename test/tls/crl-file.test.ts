/**
 * CrlFile (crl.ts): the revoked serials of a CRL file, read again only when the file changed, looked at once
 * per crlStatIntervalMs (issue 31, item 6: the file was read and parsed for every accepted connection).
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { crlStatIntervalMs } from '../../src/base/limits.js';
import { CrlFile, revocation, type CrlFilePorts } from '../../src/tls/crl.js';

const fixtures = join(import.meta.dirname, '../e2e/fixtures');
/** Revokes serial 1002 (the `revoked` certificate of fixtures/crl). */
const revokes1002 = readFileSync(join(fixtures, 'crl/crl.der'));
/** Revokes serial 2002 only. */
const revokes2002 = readFileSync(join(fixtures, 'crl-expired/crl.der'));

/** A file on a fake disk: its bytes and version are set by the test, its reads counted, its clock moved by hand. */
class FakeCrlDisk implements CrlFilePorts {
  bytes: Uint8Array | undefined = revokes1002;
  versionText = 'v1';
  reads = 0;
  stats = 0;
  atMs = 0;
  version(): string {
    this.stats++;
    if (this.bytes === undefined) throw Object.assign(new Error('ENOENT: no such file'), { code: 'ENOENT' });
    return this.versionText;
  }
  read(): Uint8Array {
    this.reads++;
    if (this.bytes === undefined) throw new Error('ENOENT: no such file');
    return this.bytes;
  }
  nowMs(): number {
    return this.atMs;
  }
  /** The file rewritten with `bytes`. */
  write(bytes: Uint8Array, version: string): void {
    this.bytes = bytes;
    this.versionText = version;
  }
}

const leaf = (serial: string): { serialNumber: string } => ({ serialNumber: serial });

describe('CrlFile', () => {
  it('refuses a revoked serial and accepts the others', () => {
    const crl = new CrlFile('crl.der', new FakeCrlDisk());
    expect(revocation(leaf('1002'), crl.revoked())).toBe('transport: certificate serial 1002 revoked');
    expect(revocation(leaf('1001'), crl.revoked())).toBeUndefined();
  });

  it('reads the file once for any number of accepts while it does not change', () => {
    const disk = new FakeCrlDisk();
    const crl = new CrlFile('crl.der', disk);
    for (let i = 0; i < 10_000; i++) {
      disk.atMs = i; // 10 s of accepts, one per millisecond
      expect(crl.revoked().has('1002')).toBe(true);
    }
    expect(disk.reads).toBe(1);
    expect(disk.stats).toBe(Math.ceil(10_000 / crlStatIntervalMs)); // one look per interval
  });

  it('honours an updated file at the next look, without a restart', () => {
    const disk = new FakeCrlDisk();
    const crl = new CrlFile('crl.der', disk);
    expect(crl.revoked().has('1002')).toBe(true);
    disk.write(revokes2002, 'v2');
    disk.atMs = crlStatIntervalMs - 1;
    expect(crl.revoked().has('1002')).toBe(true); // not looked at yet
    disk.atMs = crlStatIntervalMs;
    expect([...crl.revoked()]).toEqual(['2002']);
    expect(disk.reads).toBe(2);
  });

  it('refuses while the file cannot be read or parsed, and recovers once it can', () => {
    const disk = new FakeCrlDisk();
    const crl = new CrlFile('crl.der', disk);
    disk.bytes = undefined;
    expect(() => crl.revoked()).toThrow(/ENOENT/);
    disk.atMs += crlStatIntervalMs;
    disk.write(Buffer.from('not a CRL'), 'v2');
    expect(() => crl.revoked()).toThrow(/^crl\.der: /);
    disk.atMs += crlStatIntervalMs;
    disk.write(revokes1002, 'v3');
    expect(crl.revoked().has('1002')).toBe(true);
  });
});
