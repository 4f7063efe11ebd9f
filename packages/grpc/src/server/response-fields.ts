import type * as grpc from '@grpc/grpc-js';
import { providerServiceDefinition } from '../wire/proto.js';
import type { ProviderMethodName } from '../wire/service.js';

// The descriptor proto-loader keeps of a message: its name and its fields as the .proto spells them.
interface MessageDescriptor {
  readonly name: string;
  readonly field: readonly { readonly name: string }[];
}

const byMethod = new Map<ProviderMethodName, { readonly message: string; readonly fields: readonly string[] }>();

// As proto-loader names a field with keepCase false (PROTO_LOADER_OPTIONS): secret_data is secretData.
const camelCase = (name: string): string => name.replace(/_([a-z0-9])/g, (_, c: string) => c.toUpperCase());

/** The response message of `method` and the fields a handler's response object may set, from provider.proto. */
function responseMessage(method: ProviderMethodName): { readonly message: string; readonly fields: readonly string[] } {
  let known = byMethod.get(method);
  if (known === undefined) {
    const definition = providerServiceDefinition()[method] as grpc.MethodDefinition<unknown, unknown> & { responseType: { type: MessageDescriptor } };
    const { name, field } = definition.responseType.type;
    known = { message: name, fields: field.map((f) => camelCase(f.name)) };
    byMethod.set(method, known);
  }
  return known;
}

/**
 * Why `response` of `method` cannot be sent as it is, when it sets fields the response message
 * does not have: protobufjs would drop them without a word, so a provider returning `{ data }`
 * from GetSecretMap would serve an empty map. Names the method, the unknown fields and the
 * message's own. Undefined when every field is known.
 */
export function unknownResponseFields(method: ProviderMethodName, response: object): string | undefined {
  const { message, fields } = responseMessage(method);
  const unknown = Object.keys(response).filter((k) => !fields.includes(k) && (response as Record<string, unknown>)[k] !== undefined);
  if (unknown.length === 0) return undefined;
  const has = fields.length === 0 ? 'no fields: return {} or nothing' : `only ${fields.join(', ')}`;
  return `${method} returned ${unknown.length === 1 ? 'field' : 'fields'} ${unknown.join(', ')}, which ${message} does not have; it has ${has}`;
}
