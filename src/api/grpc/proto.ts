/**
 * Loads etcetera's copy of etcd's .proto files with protobufjs and builds grpc-js service definitions from
 * them by hand (no @grpc/proto-loader, no toObject): requests are decoded to protobufjs message instances
 * (fields read straight off them, defaults from the prototype), responses are encoded from plain wire-shaped
 * objects (see messages.ts). The same definitions serve clients in tests.
 */
import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import * as path from 'node:path';
import type { MethodDefinition, ServiceDefinition } from '@grpc/grpc-js';
import protobuf from 'protobufjs';
import { assert } from '../../base/assert.js';
import { protobufDepthMax } from '../../base/limits.js';

/** A decoded message: protobufjs instance with camelCase fields; `$bytes` is its wire size. */
// eslint-disable-next-line @typescript-eslint/no-explicit-any
export type Wire = Record<string, any>;

const protoFiles = [
  'etcd/api/etcdserverpb/rpc.proto',
  'etcd/api/v3lockpb/v3lock.proto',
  'etcd/api/v3electionpb/v3election.proto',
];

/** protos/ sits at the package root: three levels up from src/api/grpc, four from dist/src/api/grpc. */
function protosDir(): string {
  const here = path.dirname(fileURLToPath(import.meta.url));
  for (const up of ['../../..', '../../../..']) {
    const dir = path.resolve(here, up, 'protos');
    if (existsSync(path.join(dir, protoFiles[0]!))) return dir;
  }
  throw new Error(`etcetera: protos/ not found near ${here}`);
}

let rootCache: protobuf.Root | undefined;

export function protoRoot(): protobuf.Root {
  if (rootCache) return rootCache;
  // Process-wide settings of protobufjs, read by every generated coder at run time (see protobufDepthMax).
  protobuf.util.recursionLimit = protobufDepthMax;
  protobuf.Reader.recursionLimit = protobufDepthMax;
  const dir = protosDir();
  const root = new protobuf.Root();
  root.resolvePath = (_origin, target) => path.join(dir, target);
  root.loadSync(protoFiles);
  acceptAnyUtf8(root);
  root.resolveAll();
  rootCache = root;
  return root;
}

/**
 * etcd's Go decoder (gogo protobuf) takes a string field's bytes as they come; protobufjs refuses invalid
 * UTF-8 in proto3 strings, which grpc-js turned into INTERNAL "Error deserializing request" (found by the
 * fuzzer: a user name of bytes 0xff 0xfe). Strings decode leniently instead (an invalid sequence becomes
 * U+FFFD). protobufjs resolves a field's features while it parses, so the resolved feature is set, before
 * the first decode generates the coders (test/api/grpc/proto-utf8.test.ts fails if a protobufjs update ignores it).
 */
function acceptAnyUtf8(ns: protobuf.NamespaceBase): void {
  for (const nested of ns.nestedArray) {
    if (nested instanceof protobuf.Type) {
      for (const field of nested.fieldsArray) {
        const features = (field as unknown as { _features?: { utf8_validation?: string } })._features;
        if (field.type === 'string' && features !== undefined) features.utf8_validation = 'NONE';
      }
    }
    if (nested instanceof protobuf.Namespace) acceptAnyUtf8(nested);
  }
}

let keepCaseRoot: protobuf.Root | undefined;
const origNames = new WeakMap<protobuf.Type, Map<string, string>>();

/**
 * camelCase field name → the name as written in the .proto, for one message type of protoRoot() (the gRPC
 * gateway's JSON uses those: `create_revision`, `grantedTTL`).
 */
export function origFieldNames(type: protobuf.Type): Map<string, string> {
  let names = origNames.get(type);
  if (names !== undefined) return names;
  if (keepCaseRoot === undefined) {
    const dir = protosDir();
    keepCaseRoot = new protobuf.Root();
    keepCaseRoot.resolvePath = (_origin, target) => path.join(dir, target);
    keepCaseRoot.loadSync(protoFiles, { keepCase: true });
  }
  const orig = keepCaseRoot.lookupType(type.fullName);
  names = new Map(type.fieldsArray.map((f) => [f.name, orig.fieldsById[f.id]!.name]));
  origNames.set(type, names);
  return names;
}

export function messageType(name: string): protobuf.Type {
  return protoRoot().lookupType(name);
}

/** A Buffer passes through: a handler that needed the encoded size already (watch fragmenting) encoded it. */
function serializer(type: protobuf.Type): (value: Wire | Buffer) => Buffer {
  return (value) => {
    if (Buffer.isBuffer(value)) return value;
    const bytes = type.encode(value).finish();
    // protobufjs hands out a Buffer under Node; grpc-js requires one.
    return Buffer.isBuffer(bytes) ? bytes : Buffer.from(bytes.buffer, bytes.byteOffset, bytes.length);
  };
}

/** The one request type that nests (TxnRequest → RequestOp → TxnRequest). */
const nestingRequest = '.etcdserverpb.TxnRequest';

/**
 * What a TxnRequest nested past protobufDepthMax decodes to: etcd decodes it and refuses it by its op budget,
 * so the Txn handler answers this marker "too many operations in txn request" (isTooDeep).
 */
function tooDeep(bytes: number): Wire {
  return { $tooDeep: true, $bytes: bytes };
}

export function isTooDeep(m: Wire): boolean {
  return m.$tooDeep === true;
}

/** protobufjs' refusal of a message nested past its recursion limit. */
export function isDepthError(err: unknown): boolean {
  return err instanceof Error && err.message === 'max depth exceeded';
}

function deserializer(type: protobuf.Type): (buf: Buffer) => Wire {
  const nests = type.fullName === nestingRequest;
  return (buf) => {
    let msg: Wire;
    try {
      msg = type.decode(buf) as unknown as Wire;
    } catch (err) {
      if (nests && isDepthError(err)) return tooDeep(buf.length);
      throw err;
    }
    msg.$bytes = buf.length;
    return msg;
  };
}

/** The gateway's counterpart: a request type's marker for a JSON request nested too deep, if it has one. */
export function tooDeepRequest(type: protobuf.Type): Wire | undefined {
  return type.fullName === nestingRequest ? tooDeep(0) : undefined;
}

/** grpc-js definition of one service of the loaded protos, e.g. `serviceDefinition('etcdserverpb.KV')`. */
export function serviceDefinition(fullName: string): ServiceDefinition {
  const service = protoRoot().lookupService(fullName);
  const def: Record<string, MethodDefinition<Wire | Buffer, Wire | Buffer>> = {};
  for (const method of service.methodsArray) {
    method.resolve();
    const req = method.resolvedRequestType;
    const res = method.resolvedResponseType;
    assert(req && res, `unresolved types for ${fullName}.${method.name}`);
    def[method.name] = {
      path: `/${fullName}/${method.name}`,
      requestStream: method.requestStream === true,
      responseStream: method.responseStream === true,
      requestSerialize: serializer(req),
      requestDeserialize: deserializer(req),
      responseSerialize: serializer(res),
      responseDeserialize: deserializer(res),
      originalName: method.name,
    };
  }
  return def;
}
