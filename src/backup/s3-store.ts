/**
 * The bucket side of off-site snapshots (k3s's --etcd-s3): upload, list, delete, prune and download snapshot
 * files under `<bucket>/<folder>/<name>`, with the `minio` client (chosen over AWS's v3 client: 16 MB
 * installed against 23 MB, 7.4 MB of RSS loaded against 10.6 MB bundled, and no deprecation of Node 20;
 * README "Backups off the board"). The client is imported when a store is first opened, so a member without
 * --etcd-s3 never loads it.
 *
 * Uploads stream from disk: a file up to s3PartBytes goes in one PUT, a larger one as a multipart upload
 * read one part at a time into one reused buffer, so memory stays at one part whatever the snapshot's size.
 * Each request carries its body's hash (Content-MD5, or the signed SHA-256 over plain HTTP) and the object
 * the whole file's SHA-256 (x-amz-meta-sha256), which a download checks before anything is restored.
 */
import { createHash } from 'node:crypto';
import { createReadStream } from 'node:fs';
import { open, readFile, rename, rm, stat, type FileHandle } from 'node:fs/promises';
import type * as http from 'node:http';
import type { HttpsProxyAgent as ProxyAgentClass } from 'https-proxy-agent';
import { checkServerIdentity, type PeerCertificate } from 'node:tls';
import * as https from 'node:https';
import { basename } from 'node:path';
import type { Client } from 'minio';
import { s3PartBytes, s3PartsMax } from '../base/limits.js';
import type { S3Options } from '../config/s3-options.js';
import { partialSuffix, scheduledSnapshotSeconds } from './snapshot-dir.js';

export interface BucketSnapshot {
  name: string;
  /** s3://bucket/folder/name, as k3s's `etcd-snapshot ls` prints it. */
  location: string;
  sizeBytes: number;
  createdMs: number;
}

/** Why a bucket operation failed, in one line (the client's code and message). */
export class S3Error extends Error {}

const sha256Meta = 'sha256';

/**
 * The connection agent for the bucket: through a proxy when --etcd-s3-proxy or the environment names one (k3s:
 * the flag, else Go's ProxyFromEnvironment: HTTPS_PROXY / HTTP_PROXY by the endpoint's scheme, minus NO_PROXY),
 * tunnelled with CONNECT so the endpoint's TLS and signatures are end to end; with the endpoint's CA or
 * --etcd-s3-skip-ssl-verify for TLS; undefined when Node's default agent does. The proxy libraries are loaded
 * only when a proxy is used.
 */
type ProxyAgent = ProxyAgentClass<string>;
type ProxyConnectOpts = Parameters<ProxyAgent['connect']>[1];

async function agentFor(o: S3Options, ca: Buffer | undefined): Promise<http.Agent | undefined> {
  const tls = !o.insecure && (ca !== undefined || o.skipSslVerify) ? { ...(ca !== undefined ? { ca } : {}), rejectUnauthorized: !o.skipSslVerify } : {};
  const endpointUrl = `${o.insecure ? 'http' : 'https'}://${o.endpoint}/`;
  const proxy = o.proxy ?? (await import('proxy-from-env')).getProxyForUrl(endpointUrl);
  if (proxy !== '') {
    const { HttpsProxyAgent } = await import('https-proxy-agent');
    // The library's agent keeps its constructor's TLS options for the proxy's own connection and drops them from
    // the requests it carries: `connect` (agent-base's extension point) adds them back, so `ca` and
    // `rejectUnauthorized` check the endpoint's certificate inside the tunnel.
    // Tunnelled, the TLS socket knows no host name: the endpoint's name is checked explicitly (it may be an IP,
    // which SNI cannot carry).
    class EndpointTlsProxyAgent extends HttpsProxyAgent<string> {
      override connect(req: http.ClientRequest, opts: ProxyConnectOpts): ReturnType<ProxyAgent['connect']> {
        if (!opts.secureEndpoint) return super.connect(req, opts);
        const host = opts.host ?? '';
        return super.connect(req, { ...opts, ...tls, checkServerIdentity: (_name: string, cert: PeerCertificate) => checkServerIdentity(host, cert) });
      }
    }
    return new EndpointTlsProxyAgent(proxy, { keepAlive: true });
  }
  return Object.keys(tls).length > 0 ? new https.Agent({ keepAlive: true, ...tls }) : undefined;
}

export class S3Store {
  readonly #o: S3Options;
  readonly #client: Client;

  private constructor(o: S3Options, client: Client) {
    this.#o = o;
    this.#client = client;
  }

  /** Loads the client (once per process) and checks that the bucket exists. */
  static async open(o: S3Options): Promise<S3Store> {
    const { Client: MinioClient } = await import('minio');
    const [host, portText] = splitHostPort(o.endpoint);
    const ca = o.endpointCa !== undefined ? await readFile(o.endpointCa) : undefined;
    const transportAgent = await agentFor(o, ca);
    const client = new MinioClient({
      endPoint: host,
      ...(portText !== undefined ? { port: Number(portText) } : {}),
      useSSL: !o.insecure,
      accessKey: o.accessKey,
      secretKey: o.secretKey,
      region: o.region,
      partSize: s3PartBytes,
      ...(transportAgent !== undefined ? { transportAgent } : {}),
    });
    const store = new S3Store(o, client);
    const exists = await store.#timed('check the bucket', () => client.bucketExists(o.bucket));
    if (!exists) throw new S3Error(`bucket ${o.bucket} does not exist at ${o.endpoint}`);
    return store;
  }

  location(name: string): string {
    return `s3://${this.#o.bucket}/${this.#key(name)}`;
  }

  /** Uploads the file at `path` as `name`; resolves with its size and SHA-256. */
  async upload(path: string, name: string = basename(path)): Promise<{ sizeBytes: number; sha256: string }> {
    const { size } = await stat(path);
    if (size > s3PartBytes * s3PartsMax) throw new S3Error(`${path}: ${size} bytes is more than S3 takes in ${s3PartsMax} parts of ${s3PartBytes}`);
    const sha256 = await fileSha256(path);
    const key = this.#key(name);
    const meta = { 'Content-Type': 'application/octet-stream', [`x-amz-meta-${sha256Meta}`]: sha256 };
    await this.#timed(`upload ${name}`, async (signal) => {
      if (size <= s3PartBytes) {
        const body = await readFile(path);
        await this.#client.putObject(this.#o.bucket, key, body, size, meta);
        return;
      }
      await this.#multipart(path, key, meta, signal);
    });
    return { sizeBytes: size, sha256 };
  }

  /** Part by part; once `signal` says the operation timed out, no further part is sent and the upload is aborted. */
  async #multipart(path: string, key: string, meta: Record<string, string>, signal: AbortSignal): Promise<void> {
    const bucket = this.#o.bucket;
    const uploadID = await this.#client.initiateNewMultipartUpload(bucket, key, meta);
    const file = await open(path, 'r');
    const buffer = Buffer.allocUnsafe(s3PartBytes);
    try {
      const etags: Array<{ part: number; etag: string }> = [];
      for (let part = 1; ; part++) {
        signal.throwIfAborted();
        const { bytesRead, md5 } = await readPart(file, buffer);
        if (bytesRead === 0) break;
        const body = buffer.subarray(0, bytesRead);
        const headers = { 'Content-Length': bytesRead, 'Content-MD5': md5 };
        const r = await this.#client.uploadPart({ bucketName: bucket, objectName: key, uploadID, partNumber: part, headers }, body);
        etags.push({ part, etag: r.etag });
      }
      await this.#client.completeMultipartUpload(bucket, key, uploadID, etags);
    } catch (error) {
      await this.#client.abortMultipartUpload(bucket, key, uploadID).catch(() => {});
      throw error;
    } finally {
      await file.close();
    }
  }

  /** The snapshots in the folder (not in sub-folders), oldest first. */
  async list(): Promise<BucketSnapshot[]> {
    const prefix = this.#o.folder === '' ? '' : `${this.#o.folder}/`;
    const out: BucketSnapshot[] = [];
    await this.#timed('list the bucket', async () => {
      for await (const o of this.#client.listObjectsV2(this.#o.bucket, prefix, false) as AsyncIterable<{ name?: string; size?: number; lastModified?: Date }>) {
        if (o.name === undefined || o.name.endsWith('/')) continue;
        const name = o.name.slice(prefix.length);
        if (name === '' || name.startsWith('.')) continue;
        const seconds = scheduledSnapshotSeconds(name);
        out.push({ name, location: this.location(name), sizeBytes: o.size ?? 0, createdMs: seconds !== undefined ? seconds * 1000 : (o.lastModified?.getTime() ?? 0) });
      }
    });
    return out.sort((a, b) => a.createdMs - b.createdMs || (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
  }

  /** Deletes the named snapshots from the folder; names not there are reported missing. */
  async delete(names: readonly string[]): Promise<{ deleted: string[]; missing: string[] }> {
    const present = new Set((await this.list()).map((s) => s.name));
    const deleted = names.filter((n) => present.has(n));
    checkNames(names);
    if (deleted.length > 0) await this.#timed('delete snapshots', () => this.#client.removeObjects(this.#o.bucket, deleted.map((n) => this.#key(n))));
    return { deleted, missing: names.filter((n) => !present.has(n)) };
  }

  /** k3s's retention in the bucket: of `nodeName`'s scheduled snapshots keep the newest `retention`. */
  async prune(nodeName: string, retention: number): Promise<string[]> {
    const own = (await this.list()).filter((s) => scheduledSnapshotSeconds(s.name, nodeName) !== undefined);
    const excess = own.slice(0, Math.max(0, own.length - retention)).map((s) => s.name);
    return excess.length === 0 ? [] : (await this.delete(excess)).deleted;
  }

  /** Downloads `name` to `path` (whole or not at all) and checks the SHA-256 the upload recorded. */
  async download(name: string, path: string): Promise<{ sizeBytes: number }> {
    checkNames([name]);
    const key = this.#key(name);
    const tmp = `${path}${partialSuffix}`;
    try {
      const st = await this.#timed(`find ${name}`, () => this.#client.statObject(this.#o.bucket, key));
      await this.#timed(`download ${name}`, () => this.#client.fGetObject(this.#o.bucket, key, tmp));
      const want = (st.metaData as Record<string, string | undefined>)[sha256Meta];
      if (want !== undefined && want !== (await fileSha256(tmp))) throw new S3Error(`${this.location(name)}: the download's SHA-256 is not the one recorded at upload`);
      await rename(tmp, path);
      return { sizeBytes: st.size };
    } catch (error) {
      await rm(tmp, { force: true });
      throw error;
    }
  }

  #key(name: string): string {
    return this.#o.folder === '' ? name : `${this.#o.folder}/${name}`;
  }

  /**
   * One operation bounded by --etcd-s3-timeout; the client's errors become one S3Error line. The client takes
   * no abort signal: a request in flight at the timeout runs on to its end, but a multipart upload sends no
   * further part (the signal).
   */
  async #timed<T>(what: string, op: (signal: AbortSignal) => Promise<T>): Promise<T> {
    let timer: NodeJS.Timeout | undefined;
    const abort = new AbortController();
    const timeout = new Promise<never>((_, reject) => {
      timer = setTimeout(() => {
        abort.abort();
        reject(new S3Error(`${what}: no answer from ${this.#o.endpoint} in ${this.#o.timeoutMs} ms (--etcd-s3-timeout)`));
      }, this.#o.timeoutMs);
    });
    const running = op(abort.signal);
    running.catch(() => {}); // after a timeout nobody awaits it
    try {
      return await Promise.race([running, timeout]);
    } catch (error) {
      if (error instanceof S3Error) throw error;
      const e = error as { code?: string; message?: string };
      throw new S3Error(`${what} (s3://${this.#o.bucket} at ${this.#o.endpoint}): ${e.code !== undefined ? `${e.code}: ` : ''}${e.message ?? String(error)}`);
    } finally {
      clearTimeout(timer);
    }
  }
}

/** `s3://bucket/folder/name` → its parts (folder may be empty or nested). */
export function parseS3Url(url: string): { bucket: string; folder: string; name: string } | undefined {
  const m = /^s3:\/\/([^/]+)\/(?:(.*)\/)?([^/]+)$/.exec(url);
  return m === null ? undefined : { bucket: m[1]!, folder: m[2] ?? '', name: m[3]! };
}

function checkNames(names: readonly string[]): void {
  for (const n of names) if (n === '' || n.includes('/') || n === '.' || n === '..') throw new S3Error(`not a snapshot name: ${JSON.stringify(n)}`);
}

/** Bytes read and hashed at a time: hashing a whole 5 MiB part at once would hold the event loop ~15 ms. */
const readSliceBytes = 1024 * 1024;

/** Fills `buffer` with the file's next part (short at the end), hashing it slice by slice as it is read. */
export async function readPart(file: FileHandle, buffer: Buffer): Promise<{ bytesRead: number; md5: string }> {
  const md5 = createHash('md5');
  let filled = 0;
  while (filled < buffer.length) {
    const { bytesRead } = await file.read(buffer, filled, Math.min(readSliceBytes, buffer.length - filled), null);
    if (bytesRead === 0) break;
    md5.update(buffer.subarray(filled, filled + bytesRead));
    filled += bytesRead;
  }
  return { bytesRead: filled, md5: md5.digest('base64') };
}

function splitHostPort(endpoint: string): [string, string | undefined] {
  const m = /^(\[[^\]]+\]|[^:]+)(?::(\d+))?$/.exec(endpoint);
  if (m === null) throw new S3Error(`bad --etcd-s3-endpoint ${JSON.stringify(endpoint)}: expected host[:port]`);
  return [m[1]!.replace(/^\[|\]$/g, ''), m[2]];
}

async function fileSha256(path: string): Promise<string> {
  const hash = createHash('sha256');
  for await (const chunk of createReadStream(path)) hash.update(chunk as Buffer);
  return hash.digest('hex');
}
