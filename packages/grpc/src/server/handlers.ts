import * as grpc from '@grpc/grpc-js';
import { statusOfError, ProviderError } from '../wire/errors.js';
import { SECRET_STORE_CAPABILITIES } from '../wire/messages.js';
import { PROVIDER_METHOD_NAMES, type ProviderMethodName } from '../wire/service.js';
import { clientIdentityMismatch, peerIdentity, type ClientIdentityRequirement } from './identity.js';
import type { ProviderLogger } from '../tls/provider-log.js';
import type { CallContext, SecretStoreProvider } from './provider.js';
import { unknownResponseFields } from './response-fields.js';

type Method = (request: never, context: CallContext) => unknown;

const IMPLEMENTATION_KEYS: Record<ProviderMethodName, keyof SecretStoreProvider> = {
  GetSecret: 'getSecret',
  GetSecretMap: 'getSecretMap',
  PushSecret: 'pushSecret',
  DeleteSecret: 'deleteSecret',
  SecretExists: 'secretExists',
  GetAllSecrets: 'getAllSecrets',
  Validate: 'validate',
  Capabilities: 'capabilities',
};

/** Observes every finished call, e.g. for logging; never affects the call. */
export type CallObserver = (event: { method: ProviderMethodName; code: grpc.status; details: string; durationMs: number }) => void;

/**
 * grpc-js handlers for every contract method: each checks the caller's certificate identity,
 * runs the provider's method and maps a thrown error to its gRPC status. A response the
 * message cannot carry (an unknown field, a wrong type) is refused with INTERNAL naming it, and
 * logged once per problem: it is the provider's bug, which must not look like an empty secret.
 */
export function providerHandlers(
  implementation: SecretStoreProvider,
  requirement: ClientIdentityRequirement | false,
  observe: CallObserver = () => undefined,
  log: ProviderLogger = () => undefined,
): grpc.UntypedServiceImplementation {
  const handlers: grpc.UntypedServiceImplementation = {};
  const logged = new Set<string>();
  const refuse = (problem: string): void => {
    if (logged.has(problem)) return;
    logged.add(problem);
    log({ level: 'warn', message: 'provider response refused; the call failed with INTERNAL', reason: 'invalid_response', detail: problem });
  };
  for (const name of PROVIDER_METHOD_NAMES) {
    const method = resolveMethod(implementation, name);
    handlers[name] = (call: grpc.ServerUnaryCall<unknown, unknown>, callback: grpc.sendUnaryData<unknown>) => {
      const started = performance.now();
      let finished = false;
      const finish = (code: grpc.status, details: string, response?: unknown): void => {
        finished = true;
        if (code === grpc.status.OK) callback(null, response);
        else callback({ code, details });
        observe({ method: name, code, details, durationMs: performance.now() - started });
      };
      const peer = call.getAuthContext().sslPeerCertificate;
      if (peer === undefined) {
        finish(grpc.status.UNAUTHENTICATED, 'no verified client certificate on this connection');
        return;
      }
      const client = peerIdentity(peer);
      const mismatch = clientIdentityMismatch(client, requirement);
      if (mismatch !== undefined) {
        finish(grpc.status.PERMISSION_DENIED, mismatch);
        return;
      }
      const aborter = new AbortController();
      // grpc-js also emits 'cancelled' when a finished call's stream closes; only a live call aborts.
      call.once('cancelled', () => finished || aborter.abort(new ProviderError(grpc.status.CANCELLED, `${name} cancelled by the client`)));
      const context: CallContext = { metadata: call.metadata, peer: call.getPeer(), client, deadline: call.getDeadline(), signal: aborter.signal };
      Promise.resolve()
        .then(() => method(call.request as never, context))
        .then(
          (response) => {
            const invalid = invalidResponse(name, response);
            if (invalid !== undefined) {
              refuse(invalid);
              finish(grpc.status.INTERNAL, invalid);
            } else finish(grpc.status.OK, '', response ?? {});
          },
          (error: unknown) => {
            const { code, details } = statusOfError(error);
            finish(code, details);
          },
        );
    };
  }
  return handlers;
}

function resolveMethod(implementation: SecretStoreProvider, name: ProviderMethodName): Method {
  const key = IMPLEMENTATION_KEYS[name];
  const own = implementation[key] as Method | undefined;
  if (typeof own === 'function') return own.bind(implementation);
  if (name === 'Validate') return () => ({ valid: true });
  if (name === 'Capabilities') {
    const writes = typeof implementation.pushSecret === 'function' && typeof implementation.deleteSecret === 'function';
    return () => ({ capabilities: writes ? 'READ_WRITE' : 'READ_ONLY' });
  }
  return () => {
    throw new ProviderError(grpc.status.UNIMPLEMENTED, `this provider does not implement ${name} (no ${key} method)`);
  };
}

// protobufjs drops an unknown field and encodes a wrong-typed value silently (a string as base64
// bytes, an unknown enum as 0), so the easy mistakes are caught here and reported as INTERNAL
// naming the field.
function invalidResponse(name: ProviderMethodName, response: unknown): string | undefined {
  if (response === undefined || response === null) return undefined;
  if (typeof response !== 'object') return `${name} returned ${typeof response}, expected a response object`;
  const unknown = unknownResponseFields(name, response);
  if (unknown !== undefined) return unknown;
  const r = response as Record<string, unknown>;
  if (name === 'GetSecret' && r.value !== undefined && !(r.value instanceof Uint8Array)) {
    return `GetSecret returned value of type ${typeof r.value}; return bytes (Buffer or Uint8Array)`;
  }
  if ((name === 'GetSecretMap' || name === 'GetAllSecrets') && r.secrets !== undefined) {
    const bad = Object.entries(r.secrets as Record<string, unknown>).find(([, v]) => !(v instanceof Uint8Array));
    if (bad) return `${name} returned secrets[${JSON.stringify(bad[0])}] of type ${typeof bad[1]}; return bytes (Buffer or Uint8Array)`;
  }
  if (name === 'Capabilities' && r.capabilities !== undefined && !(SECRET_STORE_CAPABILITIES as readonly unknown[]).includes(r.capabilities)) {
    return `Capabilities returned ${JSON.stringify(r.capabilities)}; expected one of ${SECRET_STORE_CAPABILITIES.join(', ')}`;
  }
  return undefined;
}
