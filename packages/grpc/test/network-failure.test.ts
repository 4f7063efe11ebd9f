// A call that fails on the network says so readably (issue 33, item 4): no empty "Resolution
// note:" at the end, and a Service name (*.svc) that does not resolve points at connectTo, the
// answer outside the cluster. Real grpc-js channels, a port nobody listens on, names no DNS has.
import { afterEach, beforeAll, describe, expect, it } from '@jest/globals';
import * as grpc from '@grpc/grpc-js';
import { clientTlsMaterial, createSecretStoreProviderClient, ProviderCallError, ProviderChannel, type TlsMaterial } from '@eso-mtls/grpc';
import { failureOf } from '@eso-mtls/test-kit/failure';
import { issueTestCa, issueTestClient } from '@eso-mtls/test-kit/pki';
import { freePort } from '@eso-mtls/test-kit/ports';
import { networkFailureDetails } from '../src/client/network-failure.js';

let material: TlsMaterial;
const channels: ProviderChannel[] = [];

beforeAll(async () => {
  const ca = await issueTestCa();
  const client = await issueTestClient(ca);
  material = clientTlsMaterial({ certificate: client.cert, privateKey: client.key, caBundle: ca.cert });
});
afterEach(async () => {
  await Promise.all(channels.splice(0).map((c) => c.close()));
});

/** One attempt of GetSecret to `address` (dialling `connectTo`, when given), and the error it ends with. */
async function failedCall(address: string, connectTo?: string): Promise<ProviderCallError> {
  const channel = new ProviderChannel({ address, material, ...(connectTo === undefined ? {} : { connectTo }) });
  channels.push(channel);
  const error = await failureOf(createSecretStoreProviderClient(channel, { retry: false }).getSecret({ remoteRef: { key: 'x' } }));
  expect(error).toBeInstanceOf(ProviderCallError);
  expect(error.code).toBe(grpc.status.UNAVAILABLE);
  return error;
}

describe('network failures', () => {
  it('a refused connection names the address and does not end with an empty "Resolution note:"', async () => {
    const port = await freePort();
    const error = await failedCall(`my-provider.provider-system.svc:${port}`, `127.0.0.1:${port}`);
    expect(error.message).toContain(`ECONNREFUSED 127.0.0.1:${port}`);
    expect(error.message).not.toMatch(/Resolution note:\s*$/);
    expect(error.details).not.toMatch(/Resolution note:\s*$/);
  });

  it('a Service name that does not resolve says that connectTo dials it from outside the cluster', async () => {
    const error = await failedCall('my-provider.provider-system.svc:8443');
    expect(error.message).toContain('Name resolution failed for target dns:my-provider.provider-system.svc:8443');
    expect(error.message).toContain('my-provider.provider-system.svc is a cluster Service name');
    expect(error.message).toContain("pool.channel('my-provider.provider-system.svc:8443', { connectTo: '127.0.0.1:<port>' })");
  });

  it('another name that does not resolve gets no Service hint', async () => {
    const error = await failedCall('my-provider.provider-system.svc:8443', 'provider.invalid:8443');
    expect(error.message).toContain('Name resolution failed for target dns:provider.invalid:8443');
    expect(error.message).not.toContain('cluster Service name');
  });
});

describe('networkFailureDetails', () => {
  it("keeps a resolution note that says something, and reads Node's getaddrinfo words too", () => {
    expect(networkFailureDetails('No connection established. Last error: x. Resolution note: DNS said no')).toBe(
      'No connection established. Last error: x. Resolution note: DNS said no',
    );
    expect(networkFailureDetails('No connection established. Last error: Error: connect ECONNREFUSED 127.0.0.1:1. Resolution note: ')).toBe(
      'No connection established. Last error: Error: connect ECONNREFUSED 127.0.0.1:1',
    );
    expect(networkFailureDetails('getaddrinfo ENOTFOUND vault.secrets.svc.cluster.local')).toContain(
      "vault.secrets.svc.cluster.local is a cluster Service name, which only the cluster's DNS resolves",
    );
  });
});
