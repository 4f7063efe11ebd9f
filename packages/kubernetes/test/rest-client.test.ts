import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { createServer } from 'node:net';
import type { V1Secret } from '@kubernetes/client-node';
import { type ControlPlane, startControlPlane } from '../../../testing/envtest/src/index.js';
import { KubeApiError, KubeRestClient, WriteFencedError, connectionFromKubeConfig, corePath } from '../src/index.js';
import { RequestCounter } from '../src/client/request-counter.js';
import { apiErrorOf } from '../src/client/api-error.js';
import { TestCluster } from '@eso-mtls/test-kit/adapter';
import { eventually } from '@eso-mtls/test-kit/eventually';

// The adapter's transport against the real apiserver: status codes, fencing, counting, watches.

let plane: ControlPlane;
let cluster: TestCluster;
let api: KubeRestClient;
const counter = new RequestCounter();
let fenceOpen = true;
const fenced: string[] = [];

beforeAll(async () => {
  plane = await startControlPlane({ audit: true });
  cluster = new TestCluster(plane);
  api = new KubeRestClient(await connectionFromKubeConfig(plane.adminKubeConfig), {
    counter,
    writesAllowed: (resource) => {
      fenced.push(resource);
      return fenceOpen;
    },
  });
  await cluster.namespace('rest');
}, 120_000);

afterAll(async () => {
  api?.close();
  await plane?.stop();
});

const secretBody = (name: string, value: string, resourceVersion?: string): V1Secret => ({
  apiVersion: 'v1',
  kind: 'Secret',
  metadata: { name, namespace: 'rest', ...(resourceVersion ? { resourceVersion } : {}) },
  data: { v: Buffer.from(value).toString('base64') },
});

describe('KubeRestClient against the real apiserver', () => {
  it('creates, reads, replaces with the resourceVersion, and reports 404, 409 AlreadyExists and 409 Conflict as KubeApiError', async () => {
    const created = await api.create<V1Secret>(corePath('secrets', 'rest'), secretBody('crud', 'one'));
    expect(created.metadata?.uid).toBeTruthy();
    const read = await api.get<V1Secret>(corePath('secrets', 'rest', 'crud'));
    expect(Buffer.from(read.data!.v!, 'base64').toString()).toBe('one');
    // Cross-check with client-node: the object really is stored.
    expect((await cluster.secret('rest', 'crud'))?.metadata?.resourceVersion).toBe(created.metadata?.resourceVersion);

    const again = await api.create(corePath('secrets', 'rest'), secretBody('crud', 'two')).catch((e: unknown) => e);
    expect(again).toBeInstanceOf(KubeApiError);
    expect(again).toMatchObject({ code: 409, reason: 'AlreadyExists' });
    expect(apiErrorOf(again)).toMatchObject({ code: 409, reason: 'AlreadyExists' });

    const updated = await api.replace<V1Secret>(corePath('secrets', 'rest', 'crud'), secretBody('crud', 'three', created.metadata!.resourceVersion));
    expect(BigInt(updated.metadata!.resourceVersion!)).toBeGreaterThan(BigInt(created.metadata!.resourceVersion!));
    const stale = await api
      .replace(corePath('secrets', 'rest', 'crud'), secretBody('crud', 'four', created.metadata!.resourceVersion))
      .catch((e: unknown) => e);
    expect(stale).toMatchObject({ code: 409, reason: 'Conflict' });
    expect(Buffer.from((await cluster.secret('rest', 'crud'))!.data!.v!, 'base64').toString()).toBe('three');

    const missing = await api.get(corePath('secrets', 'rest', 'nope')).catch((e: unknown) => e);
    expect(missing).toMatchObject({ code: 404, reason: 'NotFound' });
    expect((missing as Error).message).toMatch(/GET \/api\/v1\/namespaces\/rest\/secrets\/nope: HTTP 404 NotFound/);
  });

  it('merge-patches (RFC 7386) and counts every request by verb and resource', async () => {
    const before = counter.snapshot();
    await api.create(corePath('events', 'rest'), {
      apiVersion: 'v1',
      kind: 'Event',
      metadata: { name: 'e1', namespace: 'rest' },
      involvedObject: { apiVersion: 'v1', kind: 'Service', namespace: 'rest', name: 'svc' },
      reason: 'Issued',
      message: 'm',
      type: 'Normal',
      count: 1,
    });
    const patched = await api.mergePatch<{ count: number; message: string }>(corePath('events', 'rest', 'e1'), { count: 5 });
    expect(patched).toMatchObject({ count: 5, message: 'm' });
    await api.get(corePath('secrets', 'rest'), { fieldSelector: 'metadata.name=crud', limit: 1 });
    expect(counter.since(before)).toEqual({ 'create events': 1, 'patch events': 1, 'list secrets': 1 });
  });

  it('fences every mutating request at the moment it is sent, telling the fence the resource; reads pass', async () => {
    fenceOpen = false;
    fenced.length = 0;
    try {
      await expect(api.get(corePath('secrets', 'rest'))).resolves.toBeDefined();
      const refused = await api.create(corePath('secrets', 'rest'), secretBody('fenced', 'x')).catch((e: unknown) => e);
      expect(refused).toBeInstanceOf(WriteFencedError);
      expect((refused as Error).message).toBe('POST /api/v1/namespaces/rest/secrets not sent: writes are not allowed (not the leader, or stopping)');
      await expect(api.mergePatch(corePath('events', 'rest', 'e1'), { count: 6 })).rejects.toThrow(WriteFencedError);
      expect(fenced).toEqual(['secrets', 'events']);
      expect(await cluster.secret('rest', 'fenced')).toBeUndefined();
      // Nothing reached the apiserver: its audit log has no request for the fenced Secret.
      expect(plane.auditEvents().filter((e) => e.verb === 'create' && e.objectRef?.name === 'fenced')).toEqual([]);
    } finally {
      fenceOpen = true;
    }
    await expect(api.create(corePath('secrets', 'rest'), secretBody('fenced', 'x'))).resolves.toBeDefined();
  });

  it('reuses kept-alive connections: 58 requests, at most maxSockets TLS handshakes', async () => {
    const client = new KubeRestClient(await connectionFromKubeConfig(plane.adminKubeConfig), { maxSockets: 4 });
    try {
      for (let i = 0; i < 50; i++) await client.get(corePath('secrets', 'rest', 'crud'));
      await Promise.all(Array.from({ length: 8 }, () => client.get(corePath('secrets', 'rest', 'crud'))));
    } finally {
      client.close();
    }
    // One for the sequential requests; the 8 concurrent ones add at most maxSockets - 1.
    expect(client.connectionsOpened).toBeGreaterThanOrEqual(2);
    expect(client.connectionsOpened).toBeLessThanOrEqual(4);
  });

  it('watches: delivers ADDED, MODIFIED and DELETED, ends a watch on abort, and reports a refused watch as KubeApiError', async () => {
    const events: string[] = [];
    let ended: unknown = 'not yet';
    const start = await api.get<{ metadata: { resourceVersion: string } }>(corePath('secrets', 'rest'), { fieldSelector: 'metadata.name=watched' });
    const handle = await api.watch(
      corePath('secrets', 'rest'),
      { fieldSelector: 'metadata.name=watched', resourceVersion: start.metadata.resourceVersion },
      (type, object) => events.push(`${type} ${(object as V1Secret).metadata?.name}`),
      (error) => {
        ended = error;
      },
    );
    const created = await api.create<V1Secret>(corePath('secrets', 'rest'), secretBody('watched', 'a'));
    await api.replace(corePath('secrets', 'rest', 'watched'), secretBody('watched', 'b', created.metadata!.resourceVersion));
    await cluster.deleteSecret('rest', 'watched');
    await eventually(() => expect(events).toEqual(['ADDED watched', 'MODIFIED watched', 'DELETED watched']));
    expect(ended).toBe('not yet');
    handle.abort();
    expect(ended).toBeInstanceOf(Error);
    expect((ended as Error).message).toMatch(/aborted/);

    let refused: unknown;
    await api.watch(
      '/api/v1/namespaces/rest/nonsense',
      {},
      () => undefined,
      (error) => {
        refused = error;
      },
    );
    await eventually(() => expect(refused).toMatchObject({ code: 404, statusCode: 404 }));
  });
});

describe('KubeRestClient faults', () => {
  it('gives up on a server that accepts the request and never answers, after requestTimeoutMs', async () => {
    const silent = createServer((socket) => socket.on('data', () => undefined));
    await new Promise<void>((r) => silent.listen(0, '127.0.0.1', r));
    const port = (silent.address() as { port: number }).port;
    const client = new KubeRestClient(
      { server: `http://127.0.0.1:${port}`, tls: {}, description: 'a silent server', authorize: async () => undefined },
      { requestTimeoutMs: 300 },
    );
    try {
      await expect(client.get('/api/v1/namespaces')).rejects.toThrow('GET /api/v1/namespaces: no answer within 300 ms');
    } finally {
      client.close();
      silent.close();
    }
  });

  it('through a proxy that never answers the CONNECT, gives up after requestTimeoutMs too', async () => {
    const silent = createServer((socket) => socket.on('data', () => undefined));
    await new Promise<void>((r) => silent.listen(0, '127.0.0.1', r));
    const port = (silent.address() as { port: number }).port;
    const client = new KubeRestClient(
      {
        server: 'https://127.0.0.1:6443',
        tls: {},
        proxy: { url: `http://127.0.0.1:${port}`, from: 'proxy-url' },
        description: 'test',
        authorize: async () => undefined,
      },
      { requestTimeoutMs: 300 },
    );
    try {
      await expect(client.get('/api/v1/namespaces')).rejects.toThrow(`proxy http://127.0.0.1:${port}: no answer to CONNECT 127.0.0.1:6443 within 300 ms`);
    } finally {
      client.close();
      silent.close();
    }
  });

  it('refuses a hand-built connection whose proxy it cannot honour, naming the setting', () => {
    const connection = { server: 'https://h', tls: {}, description: 'test', authorize: async () => undefined };
    expect(() => new KubeRestClient({ ...connection, proxy: { url: 'socks5://p:1080', from: 'HTTPS_PROXY' } })).toThrow(
      'HTTPS_PROXY of test socks5://p:1080: the socks5:// scheme is not supported',
    );
    expect(() => new KubeRestClient({ ...connection, server: 'http://h', proxy: { url: 'http://p:3128', from: 'proxy-url' } })).toThrow(
      'apiserver URL http://h (test): only https:// apiservers are reached through a proxy',
    );
  });

  it('rejects a server URL that is not http(s)', () => {
    expect(() => new KubeRestClient({ server: 'ftp://x', tls: {}, description: 'test', authorize: async () => undefined })).toThrow(
      'apiserver URL ftp://x (test): expected https://host[:port]',
    );
  });
});
