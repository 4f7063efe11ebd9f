import { ProviderError, SecretNotFoundError, status, type SecretStoreProvider } from '@eso-mtls/grpc';
import { secretBytes, SecretFileError, type FileSecret, type SecretFile } from './secret-file.js';
import type { FileSecretStore } from './store.js';

function find(file: SecretFile, key: string): FileSecret {
  if (key === '') throw new ProviderError(status.INVALID_ARGUMENT, 'remoteRef.key is empty; name the secret to read');
  const s = Object.hasOwn(file.secrets, key) ? file.secrets[key] : undefined;
  if (s === undefined) throw new SecretNotFoundError(`secret ${JSON.stringify(key)} does not exist`);
  return s;
}

function property(s: FileSecret, key: string, name: string): Buffer {
  const v = s.properties !== undefined && Object.hasOwn(s.properties, name) ? s.properties[name] : undefined;
  if (v === undefined) throw new SecretNotFoundError(`secret ${JSON.stringify(key)} has no property ${JSON.stringify(name)}`);
  return Buffer.from(v, 'utf8');
}

/** A secret's named values: its properties, or the fields of a value holding a JSON object of strings. */
function asMap(s: FileSecret, key: string): Record<string, Buffer> {
  if (s.properties !== undefined) return Object.fromEntries(Object.entries(s.properties).map(([k, v]) => [k, Buffer.from(v, 'utf8')]));
  let parsed: unknown;
  try {
    parsed = JSON.parse(secretBytes(s).toString('utf8'));
  } catch {
    parsed = undefined;
  }
  if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed)) {
    throw new ProviderError(
      status.FAILED_PRECONDITION,
      `secret ${JSON.stringify(key)} is a single value, not a map; give it properties or a JSON object value`,
    );
  }
  return Object.fromEntries(Object.entries(parsed).map(([k, v]) => [k, Buffer.from(typeof v === 'string' ? v : JSON.stringify(v), 'utf8')]));
}

function compileRegexp(source: string): RegExp {
  try {
    return new RegExp(source);
  } catch (e) {
    throw new ProviderError(status.INVALID_ARGUMENT, `find.name.regexp ${JSON.stringify(source)} is not a valid regular expression: ${(e as Error).message}`);
  }
}

// A data file being edited into something unusable must not be overwritten by a push.
async function write<T>(store: FileSecretStore, mutate: (file: SecretFile) => T): Promise<T> {
  try {
    return await store.update(mutate);
  } catch (e) {
    if (e instanceof SecretFileError) throw new ProviderError(status.FAILED_PRECONDITION, `${e.message}; fix the file, then retry`);
    throw e;
  }
}

/** The provider.v1 methods over a {@link FileSecretStore}. */
export function createFileProvider(store: FileSecretStore): SecretStoreProvider {
  return {
    getSecret(request) {
      const key = request.remoteRef?.key ?? '';
      const s = find(store.snapshot(), key);
      const name = request.remoteRef?.property ?? '';
      return { value: name === '' ? secretBytes(s) : property(s, key, name) };
    },

    getSecretMap(request) {
      const key = request.remoteRef?.key ?? '';
      return { secrets: asMap(find(store.snapshot(), key), key) };
    },

    async pushSecret(request) {
      const target = request.pushSecretData;
      const remoteKey = target?.remoteKey ?? '';
      if (remoteKey === '') throw new ProviderError(status.INVALID_ARGUMENT, 'pushSecretData.remoteKey is empty; name the remote secret to write');
      const secretKey = target?.secretKey ?? '';
      if (secretKey !== '' && !Object.hasOwn(request.secretData, secretKey)) {
        throw new ProviderError(
          status.INVALID_ARGUMENT,
          `secretData has no key ${JSON.stringify(secretKey)}; it has ${Object.keys(request.secretData).join(', ') || 'none'}`,
        );
      }
      await write(store, (file) => {
        const existing = file.secrets[remoteKey] ?? {};
        const tags = existing.tags;
        if (secretKey === '') {
          // The whole Kubernetes Secret: each of its keys becomes a property.
          const properties = Object.fromEntries(Object.entries(request.secretData).map(([k, v]) => [k, v.toString('utf8')]));
          file.secrets[remoteKey] = { properties, ...(tags && { tags }) };
        } else if (target?.property) {
          const { value: _v, valueBase64: _b, ...rest } = existing;
          file.secrets[remoteKey] = { ...rest, properties: { ...existing.properties, [target.property]: request.secretData[secretKey]!.toString('utf8') } };
        } else {
          file.secrets[remoteKey] = { valueBase64: request.secretData[secretKey]!.toString('base64'), ...(tags && { tags }) };
        }
      });
      return {};
    },

    async deleteSecret(request) {
      const remoteKey = request.remoteRef?.remoteKey ?? '';
      const name = request.remoteRef?.property ?? '';
      await write(store, (file) => {
        const s = find(file, remoteKey);
        if (name === '') {
          delete file.secrets[remoteKey];
          return;
        }
        property(s, remoteKey, name);
        delete s.properties![name];
        if (Object.keys(s.properties!).length === 0 && s.value === undefined && s.valueBase64 === undefined) delete file.secrets[remoteKey];
      });
      return {};
    },

    secretExists(request) {
      const remoteKey = request.remoteRef?.remoteKey ?? '';
      const s = Object.hasOwn(store.snapshot().secrets, remoteKey) ? store.snapshot().secrets[remoteKey] : undefined;
      const name = request.remoteRef?.property ?? '';
      return { exists: s !== undefined && (name === '' || (s.properties !== undefined && Object.hasOwn(s.properties, name))) };
    },

    getAllSecrets(request) {
      const path = request.find?.path ?? '';
      const name = compileRegexp(request.find?.name?.regexp ?? '');
      const tags = Object.entries(request.find?.tags ?? {});
      const secrets: Record<string, Buffer> = {};
      for (const [key, s] of Object.entries(store.snapshot().secrets)) {
        if (!key.startsWith(path) || !name.test(key)) continue;
        if (!tags.every(([k, v]) => s.tags?.[k] === v)) continue;
        secrets[key] = secretBytes(s);
      }
      return { secrets };
    },

    validate() {
      const problem = store.lastError();
      return problem === undefined
        ? { valid: true, warnings: [] }
        : { valid: false, error: problem.message, warnings: ['serving the last good contents of the data file'] };
    },

    capabilities: () => ({ capabilities: 'READ_WRITE' }),
  };
}
