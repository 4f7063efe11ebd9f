/**
 * TypeScript shapes of the provider.v1 messages as @grpc/proto-loader decodes them with
 * {@link PROTO_LOADER_OPTIONS}: camelCase fields, bytes as Buffer, enums as their names, every
 * scalar, map and repeated field present (defaults: true) and unset message fields `null`.
 * The round-trip test in test/wire.test.ts pins these shapes to provider.proto.
 */

/** The SecretStore or ClusterSecretStore whose configuration applies to a call. */
export interface ProviderReference {
  /** apiVersion of the referenced configuration object. */
  apiVersion: string;
  /** kind of the referenced configuration object. */
  kind: string;
  /** name of the referenced configuration object. */
  name: string;
  /** namespace of the referenced configuration object; empty when it is cluster-scoped. */
  namespace: string;
  /** The kind of the store reference: `SecretStore` or `ClusterSecretStore`. */
  storeRefKind: string;
}

/** Which remote secret an ExternalSecret reads. */
export interface ExternalSecretDataRemoteRef {
  /** The remote secret's name or path. */
  key: string;
  /** The version to read; empty for the current one. */
  version: string;
  /** A property inside the remote secret; empty for the whole value. */
  property: string;
  /** How ESO decodes the value: `None`, `Base64`, `Base64URL` or `Auto`. */
  decodingStrategy: string;
  /** `None`, or `Fetch` to read the secret's metadata instead of its value. */
  metadataPolicy: string;
}

/** Asks for one remote secret's value (ESO's `data` entries). */
export interface GetSecretRequest {
  /** Which secret to read. */
  remoteRef: ExternalSecretDataRemoteRef | null;
  /** The store whose configuration applies. */
  providerRef: ProviderReference | null;
  /** The namespace of the ExternalSecret that asks. */
  sourceNamespace: string;
}

/** The value of one remote secret. */
export interface GetSecretResponse {
  /** The secret's value. */
  value: Buffer;
}

/** Asks for one remote secret as a map of keys to values (`dataFrom.extract`). */
export interface GetSecretMapRequest {
  /** Which secret to read. */
  remoteRef: ExternalSecretDataRemoteRef | null;
  /** The store whose configuration applies. */
  providerRef: ProviderReference | null;
  /** The namespace of the ExternalSecret that asks. */
  sourceNamespace: string;
}

/** The keys and values of one remote secret. */
export interface GetSecretMapResponse {
  /** The secret's keys and values. */
  secrets: Record<string, Buffer>;
}

/** Where one key of a Kubernetes Secret goes on push. */
export interface PushSecretData {
  /** A JSON document, passed through unparsed. */
  metadata: Buffer;
  /** The key of the Kubernetes Secret to push; empty for the whole Secret. */
  secretKey: string;
  /** The remote secret's name or path. */
  remoteKey: string;
  /** A property inside the remote secret; empty for the whole value. */
  property: string;
}

/** Asks the provider to write a Kubernetes Secret's data to the remote store (a PushSecret). */
export interface PushSecretRequest {
  /** The store whose configuration applies. */
  providerRef: ProviderReference | null;
  /** The Kubernetes Secret's data. */
  secretData: Record<string, Buffer>;
  /** Which key goes where. */
  pushSecretData: PushSecretData | null;
  /** The namespace of the PushSecret. */
  sourceNamespace: string;
  /** The Kubernetes Secret's type. */
  secretType: string;
  /** The Kubernetes Secret's labels. */
  secretLabels: Record<string, string>;
  /** The Kubernetes Secret's annotations. */
  secretAnnotations: Record<string, string>;
}

/** The empty answer to a {@link PushSecretRequest}. */
export type PushSecretResponse = Record<string, never>;

/** Which remote secret a PushSecret writes, checks or deletes. */
export interface PushSecretRemoteRef {
  /** The remote secret's name or path. */
  remoteKey: string;
  /** A property inside the remote secret; empty for the whole value. */
  property: string;
}

/** Asks the provider to delete a pushed remote secret. */
export interface DeleteSecretRequest {
  /** The store whose configuration applies. */
  providerRef: ProviderReference | null;
  /** Which remote secret to delete. */
  remoteRef: PushSecretRemoteRef | null;
  /** The namespace of the PushSecret. */
  sourceNamespace: string;
}

/** The empty answer to a {@link DeleteSecretRequest}. */
export type DeleteSecretResponse = Record<string, never>;

/** Asks whether a pushed remote secret exists. */
export interface SecretExistsRequest {
  /** The store whose configuration applies. */
  providerRef: ProviderReference | null;
  /** Which remote secret to look for. */
  remoteRef: PushSecretRemoteRef | null;
  /** The namespace of the PushSecret. */
  sourceNamespace: string;
}

/** Whether the remote secret exists. */
export interface SecretExistsResponse {
  /** Whether it exists. */
  exists: boolean;
}

/** A regular expression the remote secret names must match. */
export interface FindName {
  /** The regular expression. */
  regexp: string;
}

/** The `find` of an ExternalSecret's dataFrom: path prefix, name regexp and tags, all ANDed. */
export interface ExternalSecretFind {
  /** Only secrets under this path; empty for all. */
  path: string;
  /** Only secrets whose name matches. */
  name: FindName | null;
  /** Only secrets with all these tags. */
  tags: Record<string, string>;
  /** How ESO converts the keys: `Default` or `Unicode`. */
  conversionStrategy: string;
  /** How ESO decodes the values: `None`, `Base64`, `Base64URL` or `Auto`. */
  decodingStrategy: string;
}

/** Asks for every remote secret a `find` selects (`dataFrom.find`). */
export interface GetAllSecretsRequest {
  /** The store whose configuration applies. */
  providerRef: ProviderReference | null;
  /** Which secrets to return. */
  find: ExternalSecretFind | null;
  /** The namespace of the ExternalSecret that asks. */
  sourceNamespace: string;
}

/** The selected remote secrets, by name. */
export interface GetAllSecretsResponse {
  /** The selected secrets' values, by name. */
  secrets: Record<string, Buffer>;
}

/** Asks the provider to check a store's configuration. */
export interface ValidateRequest {
  /** The store to check. */
  providerRef: ProviderReference | null;
  /** The namespace the call is made for. */
  sourceNamespace: string;
}

/** Whether the store's configuration is usable, with an error or warnings for the user. */
export interface ValidateResponse {
  /** Whether the configuration is usable. */
  valid: boolean;
  /** Why not, when it is not. */
  error: string;
  /** Problems that do not stop it from working. */
  warnings: string[];
}

/** What a store can do; proto3 default (unset) is READ_ONLY. */
export type SecretStoreCapabilities = 'READ_ONLY' | 'WRITE_ONLY' | 'READ_WRITE';
/** Every {@link SecretStoreCapabilities} value, in enum-number order. */
export const SECRET_STORE_CAPABILITIES: readonly SecretStoreCapabilities[] = ['READ_ONLY', 'WRITE_ONLY', 'READ_WRITE'];

/** Asks what a store can do. */
export interface CapabilitiesRequest {
  /** The store asked about. */
  providerRef: ProviderReference | null;
  /** The namespace the call is made for. */
  sourceNamespace: string;
}

/** What a store can do: read, write or both. */
export interface CapabilitiesResponse {
  /** What the store can do. */
  capabilities: SecretStoreCapabilities;
}

/** Defined by upstream but unused on the wire today: failures travel as gRPC statuses. */
export interface ProviderErrorMessage {
  /** A machine-readable error code. */
  code: string;
  /** A sentence for people. */
  message: string;
  /** Whether the call may succeed if retried. */
  retryable: boolean;
  /** More about the error, by key. */
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
