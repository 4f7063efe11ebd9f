import * as grpc from '@grpc/grpc-js';
import { rmSync } from 'node:fs';
import { startProviderServer, type ProviderServer, type ProviderServerOptions } from '@eso-mtls/grpc';
import { issueTestCa, issueTestClient, issueTestServer, TEST_SERVER_NAME, writeCertDir, type KeyPair, type TestCa } from './pki.js';

/** A CA with one server and one client leaf, shared by the tests of a file. */
export interface TestPkiSet {
  readonly ca: TestCa;
  readonly server: KeyPair;
  readonly client: KeyPair;
}

/** Issues a CA, a server leaf for {@link TEST_SERVER_NAME} and an ESO client leaf. */
export async function createTestPkiSet(): Promise<TestPkiSet> {
  const ca = await issueTestCa();
  return { ca, server: await issueTestServer(ca), client: await issueTestClient(ca) };
}

/** A provider server on 127.0.0.1 with free ports, its cert folder, and a cleanup. */
export interface RunningProvider {
  readonly server: ProviderServer;
  readonly certDir: string;
  readonly address: string;
  stop(): Promise<void>;
}

/** Starts `options.implementation` over mTLS with `pki`'s server certificate. */
export async function startTestProvider(pki: TestPkiSet, options: Omit<ProviderServerOptions, 'certDir'>): Promise<RunningProvider> {
  const certDir = writeCertDir({ ca: pki.ca.cert, cert: pki.server.cert, key: pki.server.key });
  const server = await startProviderServer({ host: '127.0.0.1', port: 0, healthPort: 0, ...options, certDir });
  return {
    server,
    certDir,
    address: `127.0.0.1:${server.port}`,
    stop: async () => {
      await server.close();
      rmSync(certDir, { recursive: true, force: true });
    },
  };
}

/**
 * A channel that dials `address` with `client` material and verifies the server as
 * {@link TEST_SERVER_NAME}, as ESO dials `<service>.<namespace>.svc:<port>`.
 */
export function clientChannel(address: string, ca: string, client: KeyPair, options: grpc.ChannelOptions = {}): grpc.Channel {
  const credentials = grpc.credentials.createSsl(Buffer.from(ca), Buffer.from(client.key), Buffer.from(client.cert));
  return new grpc.Channel(address, credentials, {
    'grpc.ssl_target_name_override': TEST_SERVER_NAME,
    'grpc.default_authority': TEST_SERVER_NAME,
    'grpc.use_local_subchannel_pool': 1,
    ...options,
  });
}
