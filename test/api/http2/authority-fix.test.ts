/** The :authority repair: HPACK Huffman decoding checked against nghttp2's encoder, block rewriting, and a raw connection. */
import * as http2 from 'node:http2';
import * as net from 'node:net';
import { Duplex } from 'node:stream';
import { describe, expect, it } from 'vitest';
import { huffmanDecode, repairAuthority, scanHeaderBlock } from '../../../src/api/http2/hpack-authority.js';
import { handOver } from '../../../src/api/http2/authority-fix.js';

/** The first HEADERS block a Node (nghttp2) client sends for `headers`. */
async function capturedBlock(headers: http2.OutgoingHttpHeaders): Promise<Buffer> {
  let bytes = Buffer.alloc(0);
  const server = net.createServer((socket) => socket.on('data', (d: Buffer) => (bytes = Buffer.concat([bytes, d]))));
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.address() as net.AddressInfo).port;
  const client = http2.connect(`http://127.0.0.1:${port}`);
  client.on('error', () => {});
  const req = client.request(headers);
  req.on('error', () => {});
  try {
    for (let i = 0; i < 100; i++) {
      let at = 24;
      while (at + 9 <= bytes.length) {
        const len = bytes.readUIntBE(at, 3);
        if (bytes[at + 3] === 1 && at + 9 + len <= bytes.length) return bytes.subarray(at + 9, at + 9 + len);
        at += 9 + len;
      }
      await new Promise((r) => setTimeout(r, 10));
    }
    throw new Error('no HEADERS frame captured');
  } finally {
    client.destroy();
    server.close();
  }
}

describe('HPACK :authority', () => {
  it('decodes the Huffman-coded authority nghttp2 sends', async () => {
    const block = await capturedBlock({ ':path': '/etcdserverpb.KV/Range', ':authority': 'etcd-0.example.com:2379' });
    expect(scanHeaderBlock(block)).toEqual({ authority: 'etcd-0.example.com:2379', block });
  });

  it('decodes every printable character', () => {
    // "www.example.com" from RFC 7541 C.4.1, Huffman-coded.
    expect(huffmanDecode(Buffer.from('f1e3c2e5f23a6ba0ab90f4ff', 'hex'))).toBe('www.example.com');
    expect(huffmanDecode(Buffer.from('a8eb10649cbf', 'hex'))).toBe('no-cache');
  });

  it('rewrites a schemed literal authority and leaves everything else byte for byte', () => {
    const literal = (v: string): Buffer => Buffer.concat([Buffer.from([0x41, v.length]), Buffer.from(v)]);
    const block = Buffer.concat([Buffer.from([0x83, 0x86]), literal('http://127.0.0.1:2379'), Buffer.from([0xbe])]);
    const scan = scanHeaderBlock(block);
    expect(scan.authority).toBe('http://127.0.0.1:2379');
    expect(scan.block).toEqual(Buffer.concat([Buffer.from([0x83, 0x86]), literal('127.0.0.1:2379'), Buffer.from([0xbe])]));
    const plain = Buffer.concat([Buffer.from([0x82]), literal('127.0.0.1:2379')]);
    expect(scanHeaderBlock(plain).block).toBe(plain);
    expect(scanHeaderBlock(Buffer.from([0x41, 0x7f])).block).toEqual(Buffer.from([0x41, 0x7f])); // truncated: untouched
  });

  it('only ever shortens: a scheme-less value is not repaired', () => {
    expect(repairAuthority('https://h:1')).toBe('h:1');
    expect(repairAuthority('passthrough:///h:1')).toBeUndefined();
    expect(repairAuthority('h:1')).toBeUndefined();
  });
});

describe('handOver', () => {
  it('drops a peer that never speaks HTTP/2', async () => {
    const server = net.createServer((socket) => handOver(socket, () => expect.fail('injected'), 100));
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const socket = net.connect((server.address() as net.AddressInfo).port, '127.0.0.1');
    socket.on('error', () => {});
    socket.resume();
    await new Promise((resolve) => socket.on('close', resolve));
    server.close();
  });
});

/** A socket whose bytes the test hands in as 'data' events, in pieces of the size it chooses. */
class FakeSocket extends Duplex {
  setNoDelay(): this {
    return this;
  }
  override _read(): void {}
  override _write(_chunk: Buffer, _enc: BufferEncoding, done: () => void): void {
    done();
  }
}

/** CPU milliseconds (user + system) of this process since `start`. */
function cpuMs(start: NodeJS.CpuUsage): number {
  const u = process.cpuUsage(start);
  return (u.user + u.system) / 1000;
}

function h2frame(type: number, flags: number, streamId: number, payload: Buffer): Buffer {
  const head = Buffer.alloc(9);
  head.writeUIntBE(payload.length, 0, 3);
  head[3] = type;
  head[4] = flags;
  head.writeUInt32BE(streamId, 5);
  return Buffer.concat([head, payload]);
}

describe('handOver, repairing', () => {
  it('passes a 4 MiB DATA frame written 256 bytes at a time through the repair in linear time', async () => {
    const socket = new FakeSocket();
    let repaired: Duplex | undefined;
    handOver(socket as unknown as net.Socket, (c) => (repaired = c));
    const authority = Buffer.from('http://127.0.0.1:2379'); // etcdctl 3.4's schemed :authority: repaired
    const block = Buffer.concat([Buffer.from([0x83, 0x86, 0x41, authority.length]), authority]);
    socket.emit('data', Buffer.concat([
      Buffer.from('PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n', 'latin1'),
      h2frame(4, 1, 0, Buffer.alloc(0)), // the ACK of the server's early SETTINGS
      h2frame(1, 4, 1, block),
    ]));
    expect(repaired).toBeDefined();
    let received = 0;
    repaired!.on('data', (b: Buffer) => (received += b.length));
    const data = h2frame(0, 1, 1, Buffer.alloc(4 * 1024 * 1024, 1));
    const start = process.cpuUsage();
    let overBudget = false;
    for (let at = 0; at < data.length && !overBudget; at += 256) {
      socket.emit('data', data.subarray(at, at + 256));
      // The old reader copied its buffer per chunk (~35 GB here): cut it off instead of waiting minutes.
      if ((at & 0xffff) === 0) overBudget = cpuMs(start) > 1000;
    }
    const ms = cpuMs(start);
    await new Promise((resolve) => setImmediate(resolve));
    expect(overBudget).toBe(false);
    expect(ms).toBeLessThan(100);
    expect(received).toBeGreaterThanOrEqual(data.length); // the repaired HEADERS, then the DATA frame whole
    repaired!.destroy();
  });
});
