import { fileURLToPath } from 'node:url';
import * as grpc from '@grpc/grpc-js';
import * as protoLoader from '@grpc/proto-loader';

/**
 * The folder holding provider/v1/provider.proto and grpc/health/v1/health.proto. Both src/wire
 * (jest, register-ts) and dist/wire (the published package) sit two levels below the package
 * root, next to proto/, which package.json `files` publishes.
 */
export const PROTO_DIR = fileURLToPath(new URL('../../proto/', import.meta.url));
/** Path of provider.proto relative to {@link PROTO_DIR}, as an import path. */
export const PROVIDER_PROTO = 'provider/v1/provider.proto';
/** Path of health.proto relative to {@link PROTO_DIR}. */
export const HEALTH_PROTO = 'grpc/health/v1/health.proto';

/**
 * How messages are mapped to JavaScript, shared by server and client so both see the shapes in
 * messages.ts: camelCase names, bytes as Buffer, enums by name (readable in logs and tests,
 * and proto-loader still accepts numbers when encoding), no 64-bit fields exist, every field
 * present after decoding.
 */
export const PROTO_LOADER_OPTIONS: protoLoader.Options = Object.freeze({
  keepCase: false,
  longs: String,
  enums: String,
  bytes: Buffer,
  defaults: true,
  arrays: true,
  objects: true,
  oneofs: true,
  includeDirs: [PROTO_DIR],
});

let cached: protoLoader.PackageDefinition | undefined;

/** The parsed package definition of provider.v1 and grpc.health.v1, loaded once per process. */
export function loadProtoDefinitions(): protoLoader.PackageDefinition {
  cached ??= protoLoader.loadSync([PROVIDER_PROTO, HEALTH_PROTO], PROTO_LOADER_OPTIONS);
  return cached;
}

/** The `provider.v1.SecretStoreProvider` service definition, for `server.addService`. */
export function providerServiceDefinition(): grpc.ServiceDefinition {
  return loadProtoDefinitions()['provider.v1.SecretStoreProvider'] as grpc.ServiceDefinition;
}

/** The `grpc.health.v1.Health` service definition. */
export function healthServiceDefinition(): grpc.ServiceDefinition {
  return loadProtoDefinitions()['grpc.health.v1.Health'] as grpc.ServiceDefinition;
}
