import { describe, expect, it } from 'vitest';
import { grpcServerKind } from '../../../src/api/grpc/grpc-transport.js';

describe('grpcServerKind (issue 34)', () => {
  it('defaults to our own server on our own HTTP/2 frames when neither the option nor the environment says', () => {
    expect(grpcServerKind(undefined, {})).toBe('frames');
    expect(grpcServerKind(undefined, { ETCETERA_GRPC_SERVER: '' })).toBe('frames');
  });

  it('keeps node:http2 and grpc-js selectable by option and by ETCETERA_GRPC_SERVER, the option first', () => {
    expect(grpcServerKind('h2', {})).toBe('h2');
    expect(grpcServerKind(undefined, { ETCETERA_GRPC_SERVER: 'h2' })).toBe('h2');
    expect(grpcServerKind('grpc-js', {})).toBe('grpc-js');
    expect(grpcServerKind(undefined, { ETCETERA_GRPC_SERVER: 'grpc-js' })).toBe('grpc-js');
    expect(grpcServerKind('h2', { ETCETERA_GRPC_SERVER: 'grpc-js' })).toBe('h2');
    expect(() => grpcServerKind(undefined, { ETCETERA_GRPC_SERVER: 'other' })).toThrow(/unknown gRPC server "other"/);
  });
});
