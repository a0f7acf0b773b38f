/**
 * String fields with invalid UTF-8: etcd's Go decoder accepts the bytes as they come (a user added with name
 * bytes 0xff 0xfe 'A' is served by etcd 3.4), so decoding must not fail (grpc-js answered INTERNAL
 * "Error deserializing request"). Invalid sequences become U+FFFD.
 */
import { describe, expect, it } from 'vitest';
import { messageType } from '../../../src/api/grpc/proto.js';

const invalid = [0xff, 0xfe, 0x41];
const field = (tag: number, bytes: number[]): number[] => [tag, bytes.length, ...bytes];

describe('string fields with invalid UTF-8', () => {
  it.each([
    ['etcdserverpb.AuthUserAddRequest', [...field(0x0a, invalid), ...field(0x12, [0x78])], { name: '\ufffd\ufffdA', password: 'x' }],
    ['etcdserverpb.AuthRoleAddRequest', field(0x0a, invalid), { name: '\ufffd\ufffdA' }],
    ['etcdserverpb.AuthenticateRequest', [...field(0x0a, [0x61]), ...field(0x12, invalid)], { name: 'a', password: '\ufffd\ufffdA' }],
    ['etcdserverpb.MemberAddRequest', field(0x0a, invalid), { peerURLs: ['\ufffd\ufffdA'] }],
  ])('%s decodes', (type, bytes, expected) => {
    const decoded = messageType(type).decode(Uint8Array.from(bytes));
    expect(decoded).toMatchObject(expected);
  });
});
