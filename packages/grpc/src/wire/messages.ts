/**
 * TypeScript shapes of the provider.v1 messages as @grpc/proto-loader decodes them with
 * {@link PROTO_LOADER_OPTIONS}: camelCase fields, bytes as Buffer, enums as their names, every
 * scalar, map and repeated field present (defaults: true) and unset message fields `null`.
 * The round-trip test in test/wire.test.ts pins these shapes to provider.proto.
 */

/** The SecretStore or ClusterSecretStore whose configuration applies to a call. */
export interface ProviderReference {
  apiVersion: string;
  kind: string;
  name: string;
  namespace: string;
  storeRefKind: string;
}

/** Which remote secret an ExternalSecret reads. */
export interface ExternalSecretDataRemoteRef {
  key: string;
  version: string;
  property: string;
  decodingStrategy: string;
  metadataPolicy: string;
}

export interface GetSecretRequest {
  remoteRef: ExternalSecretDataRemoteRef | null;
  providerRef: ProviderReference | null;
  sourceNamespace: string;
}

export interface GetSecretResponse {
  value: Buffer;
}

export interface GetSecretMapRequest {
  remoteRef: ExternalSecretDataRemoteRef | null;
  providerRef: ProviderReference | null;
  sourceNamespace: string;
}

export interface GetSecretMapResponse {
  secrets: Record<string, Buffer>;
}

export interface PushSecretData {
  /** A JSON document, passed through unparsed. */
  metadata: Buffer;
  secretKey: string;
  remoteKey: string;
  property: string;
}

export interface PushSecretRequest {
  providerRef: ProviderReference | null;
  secretData: Record<string, Buffer>;
  pushSecretData: PushSecretData | null;
  sourceNamespace: string;
  secretType: string;
  secretLabels: Record<string, string>;
  secretAnnotations: Record<string, string>;
}

export type PushSecretResponse = Record<string, never>;

/** Which remote secret a PushSecret writes, checks or deletes. */
export interface PushSecretRemoteRef {
  remoteKey: string;
  property: string;
}

export interface DeleteSecretRequest {
  providerRef: ProviderReference | null;
  remoteRef: PushSecretRemoteRef | null;
  sourceNamespace: string;
}

export type DeleteSecretResponse = Record<string, never>;

export interface SecretExistsRequest {
  providerRef: ProviderReference | null;
  remoteRef: PushSecretRemoteRef | null;
  sourceNamespace: string;
}

export interface SecretExistsResponse {
  exists: boolean;
}

export interface FindName {
  regexp: string;
}

/** The `find` of an ExternalSecret's dataFrom: path prefix, name regexp and tags, all ANDed. */
export interface ExternalSecretFind {
  path: string;
  name: FindName | null;
  tags: Record<string, string>;
  conversionStrategy: string;
  decodingStrategy: string;
}

export interface GetAllSecretsRequest {
  providerRef: ProviderReference | null;
  find: ExternalSecretFind | null;
  sourceNamespace: string;
}

export interface GetAllSecretsResponse {
  secrets: Record<string, Buffer>;
}

export interface ValidateRequest {
  providerRef: ProviderReference | null;
  sourceNamespace: string;
}

export interface ValidateResponse {
  valid: boolean;
  error: string;
  warnings: string[];
}

/** What a store can do; proto3 default (unset) is READ_ONLY. */
export type SecretStoreCapabilities = 'READ_ONLY' | 'WRITE_ONLY' | 'READ_WRITE';
/** Every {@link SecretStoreCapabilities} value, in enum-number order. */
export const SECRET_STORE_CAPABILITIES: readonly SecretStoreCapabilities[] = ['READ_ONLY', 'WRITE_ONLY', 'READ_WRITE'];

export interface CapabilitiesRequest {
  providerRef: ProviderReference | null;
  sourceNamespace: string;
}

export interface CapabilitiesResponse {
  capabilities: SecretStoreCapabilities;
}

/** Defined by upstream but unused on the wire today: failures travel as gRPC statuses. */
export interface ProviderErrorMessage {
  code: string;
  message: string;
  retryable: boolean;
  details: Record<string, string>;
}

/**
 * What a sender may pass for a message of shape `T`: every field optional, nested messages too,
 * and any Uint8Array where a Buffer is decoded.
 */
export type MessageInit<T> = T extends Buffer
  ? Uint8Array
  : T extends readonly (infer U)[]
    ? readonly MessageInit<U>[]
    : T extends object
      ? { [K in keyof T]?: MessageInit<T[K]> }
      : T;
