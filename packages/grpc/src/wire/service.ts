import * as grpc from '@grpc/grpc-js';
import type * as m from './messages.js';
import { providerServiceDefinition } from './proto.js';

/** Fully qualified name of the provider service. */
export const PROVIDER_SERVICE_NAME = 'provider.v1.SecretStoreProvider';

/** Request and response types of each unary method of `provider.v1.SecretStoreProvider`. */
export interface ProviderMethods {
  GetSecret: [m.GetSecretRequest, m.GetSecretResponse];
  GetSecretMap: [m.GetSecretMapRequest, m.GetSecretMapResponse];
  PushSecret: [m.PushSecretRequest, m.PushSecretResponse];
  DeleteSecret: [m.DeleteSecretRequest, m.DeleteSecretResponse];
  SecretExists: [m.SecretExistsRequest, m.SecretExistsResponse];
  GetAllSecrets: [m.GetAllSecretsRequest, m.GetAllSecretsResponse];
  Validate: [m.ValidateRequest, m.ValidateResponse];
  Capabilities: [m.CapabilitiesRequest, m.CapabilitiesResponse];
}

/** A method name of the provider service, e.g. `GetSecret`. */
export type ProviderMethodName = keyof ProviderMethods;
/** Request message type of method `M`. */
export type RequestOf<M extends ProviderMethodName> = ProviderMethods[M][0];
/** Response message type of method `M`. */
export type ResponseOf<M extends ProviderMethodName> = ProviderMethods[M][1];

/** Every method of the contract, in .proto order. */
export const PROVIDER_METHOD_NAMES: readonly ProviderMethodName[] = [
  'GetSecret',
  'GetSecretMap',
  'PushSecret',
  'DeleteSecret',
  'SecretExists',
  'GetAllSecrets',
  'Validate',
  'Capabilities',
];

/** The serializers proto-loader built for one method: the exact bytes on the wire. */
export interface MethodCodec<M extends ProviderMethodName> {
  /** The method's gRPC path, `/provider.v1.SecretStoreProvider/<Method>`. */
  readonly path: string;
  /** A request message as protobuf bytes. */
  encodeRequest(request: m.MessageInit<RequestOf<M>>): Buffer;
  /** Protobuf bytes as a request message, decoded as a provider receives it. */
  decodeRequest(bytes: Uint8Array): RequestOf<M>;
  /** A response message as protobuf bytes. */
  encodeResponse(response: m.MessageInit<ResponseOf<M>>): Buffer;
  /** Protobuf bytes as a response message, decoded as the client receives it. */
  decodeResponse(bytes: Uint8Array): ResponseOf<M>;
}

/** Encoders and decoders of method `method`, e.g. to inspect or produce wire bytes. */
export function methodCodec<M extends ProviderMethodName>(method: M): MethodCodec<M> {
  const d = providerServiceDefinition()[method] as grpc.MethodDefinition<RequestOf<M>, ResponseOf<M>>;
  return {
    path: d.path,
    encodeRequest: (r) => d.requestSerialize(r as RequestOf<M>),
    decodeRequest: (b) => d.requestDeserialize(Buffer.from(b.buffer, b.byteOffset, b.byteLength)),
    encodeResponse: (r) => d.responseSerialize(r as ResponseOf<M>),
    decodeResponse: (b) => d.responseDeserialize(Buffer.from(b.buffer, b.byteOffset, b.byteLength)),
  };
}

/** A raw grpc-js client of the provider service: callback-style methods named after the .proto. */
export type RawProviderClient = grpc.Client & {
  [M in ProviderMethodName]: (
    request: m.MessageInit<RequestOf<M>>,
    metadata: grpc.Metadata,
    options: grpc.CallOptions,
    callback: (error: grpc.ServiceError | null, response?: ResponseOf<M>) => void,
  ) => grpc.ClientUnaryCall;
};

let rawConstructor: grpc.ServiceClientConstructor | undefined;

/**
 * The grpc-js client class of `provider.v1.SecretStoreProvider`:
 * `new (rawProviderClientConstructor())(address, credentials, options)` gives a {@link RawProviderClient}.
 */
export function rawProviderClientConstructor(): new (address: string, credentials: grpc.ChannelCredentials, options?: grpc.ClientOptions) => RawProviderClient {
  rawConstructor ??= grpc.makeClientConstructor(providerServiceDefinition(), PROVIDER_SERVICE_NAME);
  return rawConstructor as unknown as new (address: string, credentials: grpc.ChannelCredentials, options?: grpc.ClientOptions) => RawProviderClient;
}
