import { describe, it, expect } from '@jest/globals';
import { methodCodec, loadProtoDefinitions, PROVIDER_METHOD_NAMES } from '@eso-mtls/grpc';
import type { ProviderMethods, ProviderMethodName } from '@eso-mtls/grpc';
import { lenField, mapEntry, messageField, varintField } from './support/hand-encoder.js';

// Field numbers below are typed from the contract table in the design, not from provider.proto:
// a renumbered field in the .proto makes these decodes come out wrong.
const providerRef = messageField(
  2,
  lenField(1, 'external-secrets.io/v1'),
  lenField(2, 'SecretStore'),
  lenField(3, 'vault'),
  lenField(4, 'team-a'),
  lenField(5, 'SecretStoreRef'),
);
const providerRefObject = {
  apiVersion: 'external-secrets.io/v1',
  kind: 'SecretStore',
  name: 'vault',
  namespace: 'team-a',
  storeRefKind: 'SecretStoreRef',
};
const asField = (n: number, embedded: Buffer): Buffer => Buffer.concat([Buffer.from([(n << 3) | 2]), embedded.subarray(1)]);

describe('provider.v1 decodes bytes hand-encoded from the contract field numbers', () => {
  it('GetSecretRequest: nested remote_ref (1), provider_ref (2), source_namespace (3)', () => {
    const bytes = Buffer.concat([
      messageField(1, lenField(1, 'db/password'), lenField(2, 'v3'), lenField(3, 'user'), lenField(4, 'Base64'), lenField(5, 'Fetch')),
      providerRef,
      lenField(3, 'apps'),
    ]);
    expect(methodCodec('GetSecret').decodeRequest(bytes)).toEqual({
      remoteRef: { key: 'db/password', version: 'v3', property: 'user', decodingStrategy: 'Base64', metadataPolicy: 'Fetch' },
      providerRef: providerRefObject,
      sourceNamespace: 'apps',
    });
    // GetSecretMapRequest shares the numbering.
    expect(methodCodec('GetSecretMap').decodeRequest(bytes).remoteRef?.metadataPolicy).toBe('Fetch');
  });

  it('PushSecretRequest: maps of bytes and strings, nested push_secret_data, scalars 4 and 5', () => {
    const bytes = Buffer.concat([
      asField(1, providerRef),
      mapEntry(2, 'password', Buffer.from([0, 1, 255])),
      mapEntry(2, 'user', 'admin'),
      messageField(3, lenField(1, '{"mergePolicy":"Replace"}'), lenField(2, 'password'), lenField(3, 'remote/db'), lenField(4, 'pw')),
      lenField(4, 'apps'),
      lenField(5, 'Opaque'),
      mapEntry(6, 'team', 'a'),
      mapEntry(7, 'owner', 'ops'),
    ]);
    expect(methodCodec('PushSecret').decodeRequest(bytes)).toEqual({
      providerRef: providerRefObject,
      secretData: { password: Buffer.from([0, 1, 255]), user: Buffer.from('admin') },
      pushSecretData: { metadata: Buffer.from('{"mergePolicy":"Replace"}'), secretKey: 'password', remoteKey: 'remote/db', property: 'pw' },
      sourceNamespace: 'apps',
      secretType: 'Opaque',
      secretLabels: { team: 'a' },
      secretAnnotations: { owner: 'ops' },
    });
  });

  it('DeleteSecretRequest and SecretExistsRequest: provider_ref (1), remote_ref (2), source_namespace (3)', () => {
    const bytes = Buffer.concat([asField(1, providerRef), messageField(2, lenField(1, 'remote/db'), lenField(2, 'pw')), lenField(3, 'apps')]);
    const expected = { providerRef: providerRefObject, remoteRef: { remoteKey: 'remote/db', property: 'pw' }, sourceNamespace: 'apps' };
    expect(methodCodec('DeleteSecret').decodeRequest(bytes)).toEqual(expected);
    expect(methodCodec('SecretExists').decodeRequest(bytes)).toEqual(expected);
  });

  it('GetAllSecretsRequest: find (2) with path, nested name.regexp, tags map and strategies', () => {
    const bytes = Buffer.concat([
      asField(1, providerRef),
      messageField(
        2,
        lenField(1, 'team-a/'),
        messageField(2, lenField(1, '^db-.*')),
        mapEntry(3, 'env', 'prod'),
        mapEntry(3, 'tier', 'db'),
        lenField(4, 'Default'),
        lenField(5, 'None'),
      ),
      lenField(3, 'apps'),
    ]);
    expect(methodCodec('GetAllSecrets').decodeRequest(bytes)).toEqual({
      providerRef: providerRefObject,
      find: { path: 'team-a/', name: { regexp: '^db-.*' }, tags: { env: 'prod', tier: 'db' }, conversionStrategy: 'Default', decodingStrategy: 'None' },
      sourceNamespace: 'apps',
    });
  });

  it('ValidateRequest and CapabilitiesRequest: source_namespace is field 2', () => {
    const bytes = Buffer.concat([asField(1, providerRef), lenField(2, 'apps')]);
    expect(methodCodec('Validate').decodeRequest(bytes)).toEqual({ providerRef: providerRefObject, sourceNamespace: 'apps' });
    expect(methodCodec('Capabilities').decodeRequest(bytes)).toEqual({ providerRef: providerRefObject, sourceNamespace: 'apps' });
  });

  it('responses: bytes value, maps of bytes, bool, repeated strings and the enum', () => {
    expect(methodCodec('GetSecret').decodeResponse(lenField(1, Buffer.from([0xde, 0xad])))).toEqual({ value: Buffer.from([0xde, 0xad]) });
    const map = Buffer.concat([mapEntry(1, 'a', 'x'), mapEntry(1, 'b', Buffer.alloc(0))]);
    expect(methodCodec('GetSecretMap').decodeResponse(map)).toEqual({ secrets: { a: Buffer.from('x'), b: Buffer.alloc(0) } });
    expect(methodCodec('GetAllSecrets').decodeResponse(map)).toEqual({ secrets: { a: Buffer.from('x'), b: Buffer.alloc(0) } });
    expect(methodCodec('SecretExists').decodeResponse(varintField(1, 1))).toEqual({ exists: true });
    const validate = Buffer.concat([varintField(1, 0), lenField(2, 'no token'), lenField(3, 'w1'), lenField(3, 'w2')]);
    expect(methodCodec('Validate').decodeResponse(validate)).toEqual({ valid: false, error: 'no token', warnings: ['w1', 'w2'] });
    expect(methodCodec('Capabilities').decodeResponse(varintField(1, 0))).toEqual({ capabilities: 'READ_ONLY' });
    expect(methodCodec('Capabilities').decodeResponse(varintField(1, 1))).toEqual({ capabilities: 'WRITE_ONLY' });
    expect(methodCodec('Capabilities').decodeResponse(varintField(1, 2))).toEqual({ capabilities: 'READ_WRITE' });
    expect(methodCodec('PushSecret').decodeResponse(Buffer.alloc(0))).toEqual({});
    expect(methodCodec('DeleteSecret').decodeResponse(Buffer.alloc(0))).toEqual({});
  });
});

describe('provider.v1 encodes to the contract bytes', () => {
  it('GetSecretRequest', () => {
    const bytes = methodCodec('GetSecret').encodeRequest({ remoteRef: { key: 'k', property: 'p' }, providerRef: providerRefObject, sourceNamespace: 'apps' });
    expect(bytes).toEqual(Buffer.concat([messageField(1, lenField(1, 'k'), lenField(3, 'p')), providerRef, lenField(3, 'apps')]));
  });

  it('ValidateResponse, CapabilitiesResponse and GetSecretMapResponse', () => {
    expect(methodCodec('Validate').encodeResponse({ valid: true, warnings: ['w1', 'w2'] })).toEqual(
      Buffer.concat([varintField(1, 1), lenField(3, 'w1'), lenField(3, 'w2')]),
    );
    expect(methodCodec('Capabilities').encodeResponse({ capabilities: 'READ_WRITE' })).toEqual(varintField(1, 2));
    expect(methodCodec('GetSecretMap').encodeResponse({ secrets: { a: Buffer.from('x') } })).toEqual(mapEntry(1, 'a', 'x'));
  });
});

describe('provider.proto descriptors', () => {
  const fieldsOf = (message: string) => {
    const type = loadProtoDefinitions()[`provider.v1.${message}`] as {
      type: { field: { name: string; number: number; type: string }[]; reservedRange: { start: number }[] };
    };
    return type.type;
  };

  it('reserves the CompatibilityStore field numbers of later upstream branches', () => {
    const reserved = (message: string) => fieldsOf(message).reservedRange.map((r) => r.start);
    for (const m of ['GetSecretRequest', 'GetSecretMapRequest', 'DeleteSecretRequest', 'SecretExistsRequest', 'GetAllSecretsRequest']) {
      expect([m, reserved(m)]).toEqual([m, [4]]);
    }
    expect(reserved('ValidateRequest')).toEqual([3]);
    expect(reserved('PushSecretRequest')).toEqual([8]);
  });

  it('defines the Error message (unused on the wire) with the contract numbering', () => {
    expect(fieldsOf('Error').field.map((f) => [f.name, f.number, f.type])).toEqual([
      ['code', 1, 'TYPE_STRING'],
      ['message', 2, 'TYPE_STRING'],
      ['retryable', 3, 'TYPE_BOOL'],
      ['details', 4, 'TYPE_MESSAGE'],
    ]);
  });

  it('declares the eight unary methods at /provider.v1.SecretStoreProvider/<Method>', () => {
    for (const name of PROVIDER_METHOD_NAMES) expect(methodCodec(name).path).toBe(`/provider.v1.SecretStoreProvider/${name}`);
    const service = loadProtoDefinitions()['provider.v1.SecretStoreProvider'] as Record<string, { requestStream: boolean; responseStream: boolean }>;
    expect(Object.keys(service).sort()).toEqual([...PROVIDER_METHOD_NAMES].sort());
    for (const name of PROVIDER_METHOD_NAMES) expect([name, service[name]?.requestStream, service[name]?.responseStream]).toEqual([name, false, false]);
  });
});

// Every field set, typed with our TypeScript shapes: a field missing from a shape decodes as an
// extra default and a field unknown to the .proto is dropped, so either drift fails toEqual.
const ref = { key: 'k', version: 'v', property: 'p', decodingStrategy: 'None', metadataPolicy: 'None' };
const samples: { [M in ProviderMethodName]: ProviderMethods[M] } = {
  GetSecret: [{ remoteRef: ref, providerRef: providerRefObject, sourceNamespace: 'apps' }, { value: Buffer.from('s') }],
  GetSecretMap: [{ remoteRef: ref, providerRef: providerRefObject, sourceNamespace: 'apps' }, { secrets: { a: Buffer.from('1') } }],
  PushSecret: [
    {
      providerRef: providerRefObject,
      secretData: { a: Buffer.from('1') },
      sourceNamespace: 'apps',
      secretType: 'Opaque',
      pushSecretData: { metadata: Buffer.from('{}'), secretKey: 'a', remoteKey: 'r', property: 'p' },
      secretLabels: { l: '1' },
      secretAnnotations: { n: '2' },
    },
    {},
  ],
  DeleteSecret: [{ providerRef: providerRefObject, remoteRef: { remoteKey: 'r', property: 'p' }, sourceNamespace: 'apps' }, {}],
  SecretExists: [{ providerRef: providerRefObject, remoteRef: { remoteKey: 'r', property: 'p' }, sourceNamespace: 'apps' }, { exists: true }],
  GetAllSecrets: [
    {
      providerRef: providerRefObject,
      sourceNamespace: 'apps',
      find: { path: 'p/', name: { regexp: '.*' }, tags: { t: '1' }, conversionStrategy: 'Default', decodingStrategy: 'Auto' },
    },
    { secrets: { a: Buffer.from('1') } },
  ],
  Validate: [
    { providerRef: providerRefObject, sourceNamespace: 'apps' },
    { valid: false, error: 'e', warnings: ['w'] },
  ],
  Capabilities: [{ providerRef: providerRefObject, sourceNamespace: 'apps' }, { capabilities: 'WRITE_ONLY' }],
};

describe('the TypeScript message shapes match provider.proto', () => {
  it.each(PROVIDER_METHOD_NAMES)('%s request and response round-trip with every field set', (name) => {
    const codec = methodCodec(name);
    const [request, response] = samples[name];
    expect(codec.decodeRequest(codec.encodeRequest(request))).toEqual(request);
    expect(codec.decodeResponse(codec.encodeResponse(response))).toEqual(response);
  });
});
