// Walks over the pod signer's cache yield the event loop (issue 33, item 5): a walk of thousands
// of cached requests in one go held `/healthz`, the watches and the Lease renewal for as long, and
// the kubelet restarts a controller that does not answer its probe. Nothing here is timed: a
// callback queued on the event loop either runs before the walk ends or it does not. The signer
// is the real one; its client points at no apiserver, and nothing here sends a request.
import { describe, expect, it } from '@jest/globals';
import { CertificateCache, resolvePolicy } from '@eso-mtls/core';
import { createNodeCryptoBackend } from '@eso-mtls/core/node';
import { EventRecorder } from '../src/events/event-recorder.js';
import { ITEMS_PER_TURN } from '../src/runtime/clock.js';
import { silentLogger } from '../src/runtime/logger.js';
import type { PodCertificateRequest } from '../src/pod-certificates/pod-requests.js';
import { PodCertificateSigner } from '../src/pod-certificates/pod-signer.js';
import { KubeRestClient } from '../src/client/rest-client.js';

const SERVER_SIGNER = 'eso-mtls.io/provider-server';

/** A signer whose caches are filled by hand; its informers never start. */
function signer(): PodCertificateSigner {
  const crypto = createNodeCryptoBackend();
  // Port 9 (discard): never contacted, as no informer starts and nothing is decided.
  const api = new KubeRestClient({ server: 'https://127.0.0.1:9', tls: {}, authorize: async () => undefined, description: 'no apiserver' });
  return new PodCertificateSigner(
    {
      api,
      policy: resolvePolicy({ esoNamespace: 'external-secrets-system' }),
      crypto,
      cache: new CertificateCache(crypto.verifier),
      events: new EventRecorder(api, { now: Date.now, logger: silentLogger }),
      logger: silentLogger,
      services: () => [],
      informerOptions: { watch: api, counter: api.counter },
    },
    { serverSignerName: SERVER_SIGNER, clientSignerName: 'eso-mtls.io/eso-client', maxValidity: 86_400_000 },
  );
}

/** Request `i` of one pod in namespace `burst`, Issued already or pending. */
const request = (i: number, issued: boolean): PodCertificateRequest => ({
  metadata: { name: `req-${i}`, namespace: 'burst', uid: `uid-${i}`, resourceVersion: String(1000 + i) },
  spec: { signerName: SERVER_SIGNER, podName: 'provider-0', podUID: 'pod-uid', serviceAccountName: 'default', nodeName: 'node' },
  status: { conditions: issued ? [{ type: 'Issued', status: 'True', reason: 'Issued' }] : [] },
});

describe('walks over the pod signer cache', () => {
  it('let the event loop turn while they walk thousands of pending requests, and find every one; decided ones are never held', async () => {
    const s = signer();
    const cache = s.requests.get('server')!;
    // Decided requests (thousands stay in the API after a burst) never enter the cache.
    for (let i = 0; i < ITEMS_PER_TURN; i++) cache.cacheAhead(request(i, true));
    expect(cache.size).toBe(0);
    const pending = 3 * ITEMS_PER_TURN + 10;
    for (let i = 0; i < pending; i++) cache.cacheAhead(request(i, false));
    const found: string[] = [];
    let foundWhenTheLoopTurned: number | undefined;
    setImmediate(() => (foundWhenTheLoopTurned = found.length));
    for await (const { role, request: r } of s.pending()) found.push(`${role} ${r.metadata!.name}`);
    expect(found).toEqual(Array.from({ length: pending }, (_, i) => `server req-${i}`));
    // The callback ran while the walk was still in its first turn's worth of requests.
    expect(foundWhenTheLoopTurned).toBeLessThan(ITEMS_PER_TURN);
  });
});
