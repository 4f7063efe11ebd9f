import * as grpc from '@grpc/grpc-js';
import { ProviderError, SecretNotFoundError, type CallContext, type SecretStoreProvider } from '@eso-mtls/grpc';

/** One call as the provider saw it. */
export interface SeenCall {
  readonly method: string;
  readonly request: unknown;
  readonly context: CallContext;
}

/** Secrets every memory provider starts with. */
export const MEMORY_SECRETS: Readonly<Record<string, Buffer>> = {
  'db/password': Buffer.from('hunter2'),
  'db/user': Buffer.from('admin'),
  'web/token': Buffer.from([0, 255]),
};

/** A provider keeping secrets in a Map, recording what each call saw. */
export function memoryProvider(seen: SeenCall[]): SecretStoreProvider {
  const store = new Map<string, Buffer>(Object.entries(MEMORY_SECRETS));
  const need = (key: string): Buffer => {
    const v = store.get(key);
    if (v === undefined) throw new SecretNotFoundError(`secret ${key} does not exist`);
    return v;
  };
  return {
    getSecret(request, context) {
      seen.push({ method: 'getSecret', request, context });
      if (request.remoteRef?.key === 'explode') throw new Error('backend exploded');
      if (request.remoteRef?.key === 'invalid') throw new ProviderError(grpc.status.INVALID_ARGUMENT, 'key "invalid" is not allowed');
      if (request.remoteRef?.key === 'string') return { value: 'oops' as unknown as Buffer };
      return { value: need(request.remoteRef?.key ?? '') };
    },
    getSecretMap(request, context) {
      seen.push({ method: 'getSecretMap', request, context });
      return { secrets: { [request.remoteRef?.key ?? '']: need(request.remoteRef?.key ?? '') } };
    },
    pushSecret(request, context) {
      seen.push({ method: 'pushSecret', request, context });
      for (const [k, v] of Object.entries(request.secretData)) store.set(`${request.pushSecretData?.remoteKey}/${k}`, v);
      return {};
    },
    deleteSecret(request) {
      need(request.remoteRef?.remoteKey ?? '');
      store.delete(request.remoteRef?.remoteKey ?? '');
      return {};
    },
    secretExists: (request) => ({ exists: store.has(request.remoteRef?.remoteKey ?? '') }),
    getAllSecrets: (request) => {
      const name = new RegExp(request.find?.name?.regexp ?? '');
      return { secrets: Object.fromEntries([...store].filter(([k]) => k.startsWith(request.find?.path ?? '') && name.test(k))) };
    },
    validate: (request) =>
      request.sourceNamespace === 'forbidden'
        ? { valid: false, error: 'namespace forbidden may not use this store', warnings: ['w'] }
        : { valid: true, warnings: [] },
  };
}
