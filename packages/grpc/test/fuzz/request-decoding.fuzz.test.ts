// Fuzzes the provider server's request decoding: arbitrary bytes as the request message of every
// method it serves (provider.v1 and grpc.health.v1), sent to a real @eso-mtls/grpc server over
// mTLS on 127.0.0.1 through a raw call whose serializer passes the bytes through unchanged.
//
// Properties: each call ends with a gRPC status of the contract (OK with a response that decodes,
// or INTERNAL, INVALID_ARGUMENT, NOT_FOUND, UNIMPLEMENTED), never a dropped connection or a
// deadline (a hang); the server still answers a well-formed GetSecret after each one.
// Memory bound: grpc-js refuses a request above 4 MiB (its default receive limit) before decoding,
// with RESOURCE_EXHAUSTED; the last test shows it.
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import * as grpc from '@grpc/grpc-js';
import fc from 'fast-check';
import { methodCodec, PROVIDER_METHOD_NAMES, PROVIDER_SERVICE_NAME, type ProviderMethodName } from '@eso-mtls/grpc';
import { fuzzParameters } from '../../../../testing/fuzz/runs.js';
import { memoryProvider, type SeenCall } from '../support/memory-provider.js';
import { clientChannel, createTestPkiSet, startTestProvider, type RunningProvider } from '@eso-mtls/test-kit/provider-fixture';

const HEALTH_METHODS = ['Check', 'List'] as const;
const WATCH = '/grpc.health.v1.Health/Watch';
const ANSWERS: readonly grpc.status[] = [grpc.status.OK, grpc.status.INTERNAL, grpc.status.INVALID_ARGUMENT, grpc.status.NOT_FOUND, grpc.status.UNIMPLEMENTED];
// A hang detector, far above any answer on loopback.
const DEADLINE_MS = 60_000;

let provider: RunningProvider;
let channel: grpc.Channel;
let client: grpc.Client;
const seen: SeenCall[] = [];

beforeAll(async () => {
  const pki = await createTestPkiSet();
  provider = await startTestProvider(pki, { implementation: memoryProvider(seen) });
  channel = clientChannel(provider.address, pki.ca.cert, pki.client);
  client = new grpc.Client(provider.address, grpc.credentials.createInsecure(), { channelOverride: channel });
});

afterAll(async () => {
  client?.close();
  channel?.close();
  await provider?.stop();
});

const identity = (b: Buffer): Buffer => b;

/** One unary call with `bytes` as the request message, as they are: the status and the response bytes. */
function rawCall(path: string, bytes: Buffer): Promise<{ code: grpc.status; details: string; response?: Buffer }> {
  return new Promise((resolve) => {
    client.makeUnaryRequest(path, identity, identity, bytes, new grpc.Metadata(), { deadline: Date.now() + DEADLINE_MS }, (error, response) => {
      resolve(error ? { code: error.code, details: error.details } : { code: grpc.status.OK, details: '', response: response! });
    });
  });
}

// Field keys of every wire type, nested groups (protobufjs skips them recursively), varints,
// lengths past the end, and mutations of well-formed requests.
const tag = (field: number, wireType: number) => Buffer.from([((field << 3) | wireType) & 0x7f]);
const wellFormed = (method: ProviderMethodName) =>
  methodCodec(method).encodeRequest({
    remoteRef: { key: 'db/password', version: 'v1', property: 'p', remoteKey: 'db/user' },
    secretData: { a: Buffer.from('x') },
    pushSecretData: { remoteKey: 'k', secretKey: 'a' },
    find: { path: 'db/', name: { regexp: '.*' }, tags: { t: 'v' } },
    sourceNamespace: 'apps',
  } as never);

/** Well-formed requests whose every string, map and bytes field holds anything. */
const wellFormedAnything = fc
  .tuple(
    fc.constantFrom(...PROVIDER_METHOD_NAMES),
    fc.string({ maxLength: 30, unit: 'binary' }),
    fc.string({ maxLength: 20 }),
    fc.dictionary(
      fc.string({ maxLength: 8, unit: 'binary' }),
      fc.uint8Array({ maxLength: 16 }).map((b) => Buffer.from(b)),
      { maxKeys: 4 },
    ),
  )
  .map(([m, text, other, map]) =>
    methodCodec(m).encodeRequest({
      remoteRef: { key: text, version: other, property: other, remoteKey: text },
      secretData: map,
      pushSecretData: { remoteKey: text, secretKey: other },
      find: { path: other, name: { regexp: text }, tags: Object.fromEntries(Object.keys(map).map((k) => [k, other])) },
      sourceNamespace: other,
    } as never),
  );

const requestBytes: fc.Arbitrary<Buffer> = fc.oneof(
  wellFormedAnything,
  fc.uint8Array({ maxLength: 512 }).map((b) => Buffer.from(b)),
  fc
    .array(
      fc.oneof(
        fc.tuple(fc.integer({ min: 1, max: 15 }), fc.constantFrom(0, 1, 2, 3, 4, 5, 6, 7)).map(([f, w]) => tag(f, w)),
        fc.uint8Array({ minLength: 1, maxLength: 10 }).map((b) => Buffer.from(b)),
        fc.string({ maxLength: 40 }).map((s) => Buffer.concat([Buffer.from([Buffer.byteLength(s)]), Buffer.from(s)])),
      ),
      { maxLength: 30 },
    )
    .map((parts) => Buffer.concat(parts)),
  fc.integer({ min: 1, max: 20_000 }).map((depth) => Buffer.alloc(depth, 0x0b)), // start group, field 1, unclosed
  fc
    .tuple(fc.constantFrom(...PROVIDER_METHOD_NAMES), fc.array(fc.tuple(fc.nat(200), fc.nat(255)), { maxLength: 6 }), fc.nat(200))
    .map(([method, flips, cut]) => {
      const b = Buffer.from(wellFormed(method));
      for (const [at, value] of flips) b[at % b.length] = value;
      return b.subarray(0, b.length - (cut % (b.length + 1)));
    }),
);

const method = fc.oneof(
  fc
    .constantFrom(...PROVIDER_METHOD_NAMES)
    .map((m) => ({ path: `/${PROVIDER_SERVICE_NAME}/${m}`, decode: methodCodec(m).decodeResponse as (b: Buffer) => unknown })),
  fc.constantFrom(...HEALTH_METHODS).map((m) => ({ path: `/grpc.health.v1.Health/${m}`, decode: undefined })),
  fc.constant({ path: WATCH, decode: undefined }),
);

/**
 * Health's Watch with `bytes` as its request: the first status it streams, or the status the call
 * ends with; the call is cancelled once it has answered, as a watcher that has seen enough does.
 */
function rawWatch(bytes: Buffer): Promise<{ code: grpc.status; details: string; response?: Buffer }> {
  return new Promise((resolve) => {
    const call = client.makeServerStreamRequest('/grpc.health.v1.Health/Watch', identity, identity, bytes, new grpc.Metadata(), {
      deadline: Date.now() + DEADLINE_MS,
    });
    call.once('data', (response: Buffer) => {
      resolve({ code: grpc.status.OK, details: '', response });
      call.cancel();
    });
    call.once('error', (e: grpc.ServiceError) => resolve({ code: e.code, details: e.details }));
    call.once('status', (s: grpc.StatusObject) => resolve({ code: s.code, details: s.details }));
  });
}

async function stillServes(): Promise<void> {
  const { code, response } = await rawCall(`/${PROVIDER_SERVICE_NAME}/GetSecret`, wellFormed('GetSecret'));
  expect(code).toBe(grpc.status.OK);
  expect(methodCodec('GetSecret').decodeResponse(response!).value).toEqual(Buffer.from('hunter2'));
}

describe('the provider server given arbitrary request bytes over mTLS', () => {
  it('answers every method with a status of the contract and keeps serving', async () => {
    await stillServes();
    await fc.assert(
      fc.asyncProperty(method, requestBytes, async ({ path, decode }, bytes) => {
        seen.length = 0;
        const { code, details, response } = await (path === WATCH ? rawWatch(bytes) : rawCall(path, bytes));
        if (!ANSWERS.includes(code)) throw new Error(`${path} answered ${grpc.status[code]}: ${details}`);
        if (code === grpc.status.OK && decode !== undefined) decode(response!);
        await stillServes();
      }),
      fuzzParameters(40),
    );
  });

  it('refuses a request above 4 MiB before decoding it (RESOURCE_EXHAUSTED), and keeps serving', async () => {
    const { code } = await rawCall(`/${PROVIDER_SERVICE_NAME}/GetSecret`, Buffer.alloc(4 * 1024 * 1024 + 1, 0x0b));
    expect(code).toBe(grpc.status.RESOURCE_EXHAUSTED);
    await stillServes();
  });
});
