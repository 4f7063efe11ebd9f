// The file provider serving from a pod-certificate projection (credentials.pem and a
// ClusterTrustBundle ca.crt) instead of a Secret: chosen by --cert-layout or CERT_LAYOUT.
import { beforeAll, describe, expect, it } from '@jest/globals';
import { X509Certificate } from 'node:crypto';
import { rmSync } from 'node:fs';
import { join } from 'node:path';
import { CertificateWatcher, createSecretStoreProviderClient, ProviderChannel } from '@eso-mtls/grpc';
import { parseFileProviderConfig } from '../src/config.js';
import { writeAtomically } from '@eso-mtls/test-kit/demo';
import { trustAnchors } from '../../../testing/kubelet/pem-files.js';
import { TEST_SERVER_NAME, type KeyPair } from '@eso-mtls/test-kit/pki';
import { credentialsPem, opensslP256Ca, opensslPodLeaf, podCertificateDir, podCertificateFiles } from '@eso-mtls/test-kit/pod-certificates';
import { probe } from '@eso-mtls/test-kit/tls-probe';
import { useProviderDirs } from './support/provider-dirs.js';
import { startProviderProcess, until } from './support/provider-process.js';

const serial = (pem: string) => new X509Certificate(pem).serialNumber.toLowerCase();

describe('configuration of the certificate layout', () => {
  it('--cert-layout wins over CERT_LAYOUT; the default is the Secret layout', () => {
    const layout = (argv: string[], env: Record<string, string> = {}) => parseFileProviderConfig(['--data-file', '/d.yaml', ...argv], env).certLayout;
    expect(layout([])).toBe('secret');
    expect(layout([], { CERT_LAYOUT: 'pod-certificate' })).toBe('pod-certificate');
    expect(layout(['--cert-layout', 'secret'], { CERT_LAYOUT: 'pod-certificate' })).toBe('secret');
  });

  it('names a layout that does not exist', () => {
    expect(() => parseFileProviderConfig(['--data-file', 'x', '--cert-layout', 'podCertificate'], {})).toThrow(
      'cert-layout="podCertificate" is not one of secret, pod-certificate',
    );
  });
});

describe('main, as a process, over a pod-certificate folder', () => {
  let ca: KeyPair;
  let otherCa: KeyPair;
  let servers: KeyPair[];
  let client: KeyPair;
  beforeAll(async () => {
    [ca, otherCa] = await Promise.all([opensslP256Ca('pod CA'), opensslP256Ca('next pod CA')]);
    [servers, client] = await Promise.all([
      Promise.all([opensslPodLeaf(ca, 'ED25519', 'server'), opensslPodLeaf(ca, 'ECDSAP384', 'server')]),
      opensslPodLeaf(ca, 'ECDSAP256', 'client'),
    ]);
  });
  // ca.crt as projected from two ClusterTrustBundles: the current CA and the next one.
  const dirs = useProviderDirs('pod-certificate', { secrets: { greeting: { value: 'hello' } } }, () =>
    podCertificateDir(servers[0]!, trustAnchors([ca.cert, otherCa.cert])),
  );

  it('serves ESO over mTLS from credentials.pem and ca.crt, and serves the next leaf after an atomic swap', async () => {
    const certDir = dirs.certDir();
    const provider = startProviderProcess(join(dirs.dataDir(), 'secrets.json'), certDir, ['--cert-layout', 'pod-certificate']);
    const { child, exited } = provider;
    const serving = await until('the serving line', () => {
      if (child.exitCode !== null) throw new Error(`main exited with ${child.exitCode}: ${provider.stderr()}`);
      return provider.lines().find((l) => l.message === 'serving') as { port: number; healthPort: number } | undefined;
    });
    // ESO's side: its own pod certificate, read the same way.
    const clientDir = await podCertificateDir(client, trustAnchors([ca.cert, otherCa.cert]));
    const watcher = new CertificateWatcher({ directory: clientDir, layout: 'pod-certificate', purpose: 'clientAuth' });
    const channel = new ProviderChannel({
      address: `${TEST_SERVER_NAME}:8080`,
      connectTo: `127.0.0.1:${serving.port}`,
      material: await watcher.start(),
      channelOptions: { 'grpc.use_local_subchannel_pool': 1 },
    });
    const probeServer = () => probe(serving.port, { ca: ca.cert, cert: client.cert, key: client.key, servername: TEST_SERVER_NAME });
    try {
      expect(await createSecretStoreProviderClient(channel, { retry: false }).getSecret({ remoteRef: { key: 'greeting' } })).toEqual(Buffer.from('hello'));
      expect((await probeServer()).serverSerial).toBe(serial(servers[0]!.cert));

      await writeAtomically(certDir, podCertificateFiles(credentialsPem(servers[1]!), trustAnchors([ca.cert, otherCa.cert])));
      const reloaded = await until('the reload line', () => provider.lines().find((l) => l.reason === 'reloaded'));
      expect(reloaded.serialNumber).toBe(serial(servers[1]!.cert));
      expect((await probeServer()).serverSerial).toBe(serial(servers[1]!.cert));
      // The served expiry says it is a pod certificate, which no Secret of the controller's is compared with;
      // its lifetime, beside it, tells whether the kubelet refreshes it in time.
      const exposition = await (await fetch(`http://127.0.0.1:${serving.healthPort}/metrics`)).text();
      const labels = '{namespace="provider-system",service="file-provider",source="pod_certificate"}';
      expect(exposition).toMatch(new RegExp(`eso_provider_served_certificate_expiry_seconds${labels.replace(/[{}]/g, '\\$&')} \\d+`));
      const pair = new X509Certificate(servers[1]!.cert);
      expect(exposition).toContain(
        `eso_provider_served_certificate_lifetime_seconds${labels} ${(Date.parse(pair.validTo) - Date.parse(pair.validFrom)) / 1000}\n`,
      );
    } finally {
      watcher.close();
      await channel.close();
      rmSync(clientDir, { recursive: true, force: true });
      child.kill('SIGTERM');
    }
    expect(await exited).toBe(0);
    expect(provider.stderr()).toBe('');
  });
});
