/**
 * HTTP headers → gRPC metadata, as grpc-gateway v1's AnnotateContext and DefaultHeaderMatcher do for etcd:
 * `Authorization` passes as "authorization", and every `Grpc-Metadata-<Key>` header as "<key>". So
 * `Grpc-Metadata-Token: <token>` authenticates like etcd's own "token" metadata, and
 * `Grpc-Metadata-Hasleader: true` asks for require-leader.
 */
import type * as http from 'node:http';

const metadataHeaderPrefix = 'grpc-metadata-';
/**
 * Keys grpc-js accepts for text values (its Metadata.set throws on others, and a throw here would escape the
 * request listener): lowercase token characters, not a binary "-bin" key.
 */
const textKey = /^[0-9a-z_.-]+$/;
/**
 * Text values grpc-js accepts are printable ASCII; an HTTP header may carry other latin1 bytes. etcd passes
 * such a value on and refuses it as a token ("invalid auth token"); replacing those bytes with '?' keeps that
 * answer, since no token we issue contains '?'.
 */
const notText = /[^ -~]/g;

/** The metadata of one gateway call: grpc-js' `Metadata.get` shape, which is all the services read. */
export class GatewayMetadata {
  readonly #values = new Map<string, string[]>();

  get(key: string): string[] {
    return this.#values.get(key.toLowerCase()) ?? [];
  }

  add(key: string, value: string): void {
    const values = this.#values.get(key);
    if (values === undefined) this.#values.set(key, [value]);
    else values.push(value);
  }
}

export function gatewayMetadata(headers: http.IncomingHttpHeaders): GatewayMetadata {
  const metadata = new GatewayMetadata();
  for (const [name, value] of Object.entries(headers)) {
    if (value === undefined) continue;
    let key: string;
    if (name === 'authorization') key = 'authorization';
    else if (name.startsWith(metadataHeaderPrefix)) key = name.slice(metadataHeaderPrefix.length);
    else continue;
    if (!textKey.test(key) || key.endsWith('-bin')) continue;
    for (const v of Array.isArray(value) ? value : [value]) metadata.add(key, v.replace(notText, '?'));
  }
  return metadata;
}
