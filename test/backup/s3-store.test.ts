/**
 * The bucket side (src/backup/s3-store.ts) against s3rver on 127.0.0.1: a file above the part size goes up
 * as a multipart upload and comes back byte for byte; list, delete and k3s's prune in the bucket; a download
 * whose bytes changed in the bucket is refused by the SHA-256 recorded at upload; and the local check before
 * an upload (offsite-snapshots.ts) refuses a damaged snapshot, gzipped or not.
 */
import { createHash, randomBytes } from 'node:crypto';
import { mkdtempSync, readFileSync, readdirSync, rmSync, statSync, writeFileSync } from 'node:fs';
import * as http from 'node:http';
import { connect, createServer, type AddressInfo, type Socket } from 'node:net';
import { open } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { gzipSync } from 'node:zlib';
import S3rver from 's3rver';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { verifyLocalSnapshot } from '../../src/backup/offsite-snapshots.js';
import { readPart, S3Store } from '../../src/backup/s3-store.js';
import { s3PartBytes } from '../../src/base/limits.js';
import type { S3Options } from '../../src/config/s3-options.js';
import { freePort } from '../e2e/harness.js';

const dir = mkdtempSync(join(tmpdir(), 'etcetera-s3-store-'));
let server: S3rver;
let options: S3Options;
beforeAll(async () => {
  const port = await freePort();
  server = new S3rver({ address: '127.0.0.1', port, silent: true, directory: join(dir, 's3'), configureBuckets: [{ name: 'store-test', configs: [] }] });
  await server.run();
  options = { endpoint: `127.0.0.1:${port}`, skipSslVerify: false, insecure: true, accessKey: 'S3RVER', secretKey: 'S3RVER', bucket: 'store-test', region: 'us-east-1', folder: 'f/g', timeoutMs: 10_000 };
});
afterAll(async () => {
  await server.close();
  rmSync(dir, { recursive: true, force: true });
});

/** An etcd-format snapshot's shape: pages (a multiple of 512 bytes), then their SHA-256. */
function snapshotBytes(pages: number): Buffer {
  const body = randomBytes(pages * 512);
  return Buffer.concat([body, createHash('sha256').update(body).digest()]);
}

describe('S3Store', () => {
  it('uploads a file larger than a part in parts and downloads it unchanged', async () => {
    const store = await S3Store.open(options);
    const file = join(dir, 'etcd-snapshot-n-100');
    writeFileSync(file, snapshotBytes(Math.ceil((1.2 * s3PartBytes) / 512)));
    const up = await store.upload(file);
    expect(up.sizeBytes).toBe(statSync(file).size);
    const back = join(dir, 'back');
    await store.download('etcd-snapshot-n-100', back);
    expect(readFileSync(back).equals(readFileSync(file))).toBe(true);
    expect(store.location('etcd-snapshot-n-100')).toBe('s3://store-test/f/g/etcd-snapshot-n-100');
  });

  it("lists the folder's snapshots oldest first, deletes by name, and prunes one node's scheduled ones", async () => {
    const store = await S3Store.open(options);
    for (const name of ['etcd-snapshot-n-200', 'etcd-snapshot-n-300', 'etcd-snapshot-other-150', 'manual.db']) {
      const f = join(dir, name);
      writeFileSync(f, snapshotBytes(2));
      await store.upload(f);
    }
    const names = async (): Promise<string[]> => (await store.list()).map((s) => s.name);
    expect((await names()).filter((n) => n !== 'manual.db')).toEqual(['etcd-snapshot-n-100', 'etcd-snapshot-other-150', 'etcd-snapshot-n-200', 'etcd-snapshot-n-300']);
    expect(await store.prune('n', 2)).toEqual(['etcd-snapshot-n-100']);
    expect(await store.delete(['manual.db', 'nope'])).toEqual({ deleted: ['manual.db'], missing: ['nope'] });
    expect(await names()).toEqual(['etcd-snapshot-other-150', 'etcd-snapshot-n-200', 'etcd-snapshot-n-300']);
  });

  it('refuses a download whose bytes changed in the bucket', async () => {
    const store = await S3Store.open(options);
    const file = join(dir, 'etcd-snapshot-n-400');
    writeFileSync(file, snapshotBytes(4));
    await store.upload(file);
    // s3rver keeps each object as a file: change one byte of it behind the store's back.
    const stored = findFile(join(dir, 's3'), (p) => p.includes('etcd-snapshot-n-400') && p.endsWith('._S3rver_object'));
    const bytes = readFileSync(stored);
    bytes[100] = bytes[100]! ^ 0xff;
    writeFileSync(stored, bytes);
    await expect(store.download('etcd-snapshot-n-400', join(dir, 'tampered'))).rejects.toThrow("the download's SHA-256 is not the one recorded at upload");
    expect(readdirSync(dir).some((n) => n.startsWith('tampered'))).toBe(false);
  });

  it('gives up on an endpoint that accepts and never answers after --etcd-s3-timeout', async () => {
    const sockets: Socket[] = [];
    const silent = createServer((s) => sockets.push(s));
    await new Promise<void>((resolve) => silent.listen(0, '127.0.0.1', resolve));
    try {
      const t0 = performance.now();
      const port = (silent.address() as AddressInfo).port;
      await expect(S3Store.open({ ...options, endpoint: `127.0.0.1:${port}`, timeoutMs: 300 })).rejects.toThrow(`check the bucket: no answer from 127.0.0.1:${port} in 300 ms (--etcd-s3-timeout)`);
      expect(performance.now() - t0).toBeLessThan(3_000);
    } finally {
      for (const s of sockets) s.destroy();
      silent.close();
    }
  });

  it('names the bucket and endpoint when the bucket is not there', async () => {
    await expect(S3Store.open({ ...options, bucket: 'no-such-bucket' })).rejects.toThrow(`bucket no-such-bucket does not exist at ${options.endpoint}`);
  });
});

describe('S3Store over HTTPS (--etcd-s3-endpoint-ca, --etcd-s3-skip-ssl-verify)', () => {
  const fixtures = join(import.meta.dirname, '../e2e/fixtures/crl');
  it("trusts the endpoint's certificate through the given CA or when told to skip the check, and refuses it otherwise", async () => {
    const port = await freePort();
    const tls = new S3rver({
      address: '127.0.0.1', port, silent: true, directory: join(dir, 's3-tls'), configureBuckets: [{ name: 'tls-test', configs: [] }],
      key: readFileSync(join(fixtures, 'server.key')), cert: readFileSync(join(fixtures, 'server.pem')),
    });
    await tls.run();
    try {
      const https = { ...options, endpoint: `127.0.0.1:${port}`, insecure: false, bucket: 'tls-test' };
      await expect(S3Store.open(https)).rejects.toThrow(/certificate/);
      expect((await (await S3Store.open({ ...https, endpointCa: join(fixtures, 'ca.pem') })).list()).length).toBe(0);
      expect((await (await S3Store.open({ ...https, skipSslVerify: true })).list()).length).toBe(0);
      // Through a proxy the endpoint's certificate is still checked, end to end inside the tunnel.
      const proxy = await connectProxy();
      try {
        await expect(S3Store.open({ ...https, proxy: proxy.url })).rejects.toThrow(/certificate/);
        expect((await (await S3Store.open({ ...https, endpointCa: join(fixtures, 'ca.pem'), proxy: proxy.url })).list()).length).toBe(0);
        expect(proxy.tunnels()).toBe(2);
      } finally {
        await proxy.close();
      }
    } finally {
      await tls.close();
    }
  });
});

/** A CONNECT proxy on 127.0.0.1 that counts the tunnels it opened, as a site's egress proxy would carry them. */
async function connectProxy(): Promise<{ url: string; tunnels: () => number; close: () => Promise<void> }> {
  let tunnels = 0;
  const sockets = new Set<Socket>();
  const server = http.createServer((_req, res) => res.writeHead(405).end());
  server.on('connect', (req: http.IncomingMessage, client: Socket, head: Buffer) => {
    const at = req.url!.lastIndexOf(':');
    const upstream = connect(Number(req.url!.slice(at + 1)), req.url!.slice(0, at), () => {
      tunnels++;
      client.write('HTTP/1.1 200 Connection Established\r\n\r\n');
      upstream.write(head);
      upstream.pipe(client);
      client.pipe(upstream);
    });
    for (const s of [client, upstream]) {
      sockets.add(s);
      s.on('close', () => sockets.delete(s));
    }
    upstream.on('error', () => client.destroy());
    client.on('error', () => upstream.destroy());
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    tunnels: () => tunnels,
    close: () => {
      for (const s of sockets) s.destroy();
      return new Promise((resolve) => server.close(() => resolve()));
    },
  };
}

describe('S3Store through a proxy (--etcd-s3-proxy, else the environment)', () => {
  it('tunnels every request through --etcd-s3-proxy', async () => {
    const proxy = await connectProxy();
    try {
      const store = await S3Store.open({ ...options, folder: 'proxied', proxy: proxy.url });
      const file = join(dir, 'proxied.db');
      writeFileSync(file, snapshotBytes(8));
      await store.upload(file, 'etcd-snapshot-proxied-1');
      expect((await store.list()).map((s) => s.name)).toEqual(['etcd-snapshot-proxied-1']);
      expect(proxy.tunnels()).toBeGreaterThan(0);
    } finally {
      await proxy.close();
    }
  });

  it("uses the environment's HTTP_PROXY without the flag, and not for a host in NO_PROXY", async () => {
    const proxy = await connectProxy();
    const saved = { HTTP_PROXY: process.env.HTTP_PROXY, NO_PROXY: process.env.NO_PROXY };
    try {
      process.env.HTTP_PROXY = proxy.url;
      delete process.env.NO_PROXY;
      await (await S3Store.open(options)).list();
      const through = proxy.tunnels();
      expect(through).toBeGreaterThan(0);
      process.env.NO_PROXY = '127.0.0.1';
      await (await S3Store.open(options)).list();
      expect(proxy.tunnels()).toBe(through);
    } finally {
      for (const [k, v] of Object.entries(saved)) {
        if (v === undefined) delete process.env[k];
        else process.env[k] = v;
      }
      await proxy.close();
    }
  });
});

describe("a multipart upload's parts", () => {
  it('are read whole (the last one short), each with the MD5 of exactly its bytes', async () => {
    const bytes = randomBytes(s3PartBytes + 12_345);
    const path = join(dir, 'parts');
    writeFileSync(path, bytes);
    const file = await open(path, 'r');
    try {
      const buffer = Buffer.alloc(s3PartBytes);
      const parts: Array<{ bytesRead: number; md5: string }> = [];
      for (;;) {
        const p = await readPart(file, buffer);
        if (p.bytesRead === 0) break;
        parts.push(p);
        expect(p.md5).toBe(createHash('md5').update(bytes.subarray((parts.length - 1) * s3PartBytes, (parts.length - 1) * s3PartBytes + p.bytesRead)).digest('base64'));
      }
      expect(parts.map((p) => p.bytesRead)).toEqual([s3PartBytes, 12_345]);
    } finally {
      await file.close();
    }
  });
});

describe('the check before an upload', () => {
  it('passes a whole snapshot, plain or gzipped, and refuses a damaged one', async () => {
    const good = snapshotBytes(3);
    const bad = Buffer.from(good);
    bad[10] = bad[10]! ^ 1;
    const write = (name: string, bytes: Buffer): string => {
      const p = join(dir, name);
      writeFileSync(p, bytes);
      return p;
    };
    await verifyLocalSnapshot(write('good', good));
    await verifyLocalSnapshot(write('good.gz', gzipSync(good)));
    await expect(verifyLocalSnapshot(write('bad', bad))).rejects.toThrow('expected sha256');
    await expect(verifyLocalSnapshot(write('bad.gz', gzipSync(bad)))).rejects.toThrow('SHA-256 trailer does not match');
    await expect(verifyLocalSnapshot(write('short', good.subarray(0, 700)))).rejects.toThrow('no SHA-256 trailer');
  });
});

function findFile(root: string, match: (path: string) => boolean): string {
  for (const e of readdirSync(root, { withFileTypes: true, recursive: true })) {
    const p = join(e.parentPath, e.name);
    if (e.isFile() && match(p)) return p;
  }
  throw new Error(`no file under ${root}`);
}
