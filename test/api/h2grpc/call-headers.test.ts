import { describe, expect, it } from 'vitest';
import { HeaderMetadata, encodeStatusMessage, timeoutMs } from '../../../src/api/h2grpc/call-headers.js';

describe('call headers', () => {
  it('reads metadata as grpc-js gives it: text as is, -bin base64-decoded and split, transport headers hidden', () => {
    const md = new HeaderMetadata({ token: 'a,b', 'x-bin': 'AQI=,Aw==', 'grpc-timeout': '1S', ':path': '/x', te: 'trailers' });
    expect(md.get('token')).toEqual(['a,b']);
    expect(md.get('Token')).toEqual(['a,b']);
    expect(md.get('x-bin')).toEqual([Buffer.from([1, 2]), Buffer.from([3])]);
    expect(md.get('grpc-timeout')).toEqual([]);
    expect(md.get(':path')).toEqual([]);
    expect(md.get('te')).toEqual([]);
    expect(md.get('missing')).toEqual([]);
  });

  it('parses grpc-timeout in every unit, refuses what is not one', () => {
    const cases: [string | undefined, number | undefined][] = [
      [undefined, undefined], ['1H', 3_600_000], ['2M', 120_000], ['5S', 5000], ['250m', 250], ['1500u', 1], ['99999999n', 99],
    ];
    for (const [header, ms] of cases) expect(timeoutMs(header), String(header)).toBe(ms);
    for (const bad of ['', '5', 'S', '123456789S', '5s', '-1S']) expect(timeoutMs(bad), bad).toBeNaN();
  });

  it('percent-encodes grpc-message: printable ASCII but % as is, the rest as UTF-8 bytes', () => {
    expect(encodeStatusMessage('etcdserver: key not found')).toBe('etcdserver: key not found');
    expect(encodeStatusMessage('50% naïve\n')).toBe('50%25 na%C3%AFve%0A');
  });
});
