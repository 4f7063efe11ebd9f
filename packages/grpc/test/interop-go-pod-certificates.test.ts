// The Go reloading provider and client (testing/go-interop) with -cert-layout=pod-certificate:
// each reads a folder as a podCertificate plus clusterTrustBundle projection writes it
// (credentials.pem: the PKCS#8 key, then the chain; ca.crt: the trust anchors), swapped the
// kubelet's way (`..data`). The Go client calls the Go provider back to back, the provider
// closing every connection after 300 ms, through leaf rotations on both sides and an overlap CA
// rotation: every new leaf is taken and no call fails. Then malformed credential bundles are
// refused once each with their reason while the last good certificate keeps serving.
// Scale: 2 Go programs, 6 openssl leaves and 2 CAs, about 8 folder swaps per side.
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { X509Certificate } from 'node:crypto';
import { mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { writeAtomically } from '@eso-mtls/test-kit/demo';
import { buildGoCommands, spawnGoProgram, type GoProgram } from './support/go-interop.js';
import { ADDRESS, BUILD_TIMEOUT, serial, SERVER_NAME, TEST_TIMEOUT } from './support/go-reloading.js';
import { credentialsPem, opensslP256Ca, opensslPodLeaf, podCertificateFiles } from '@eso-mtls/test-kit/pod-certificates';
import type { KeyPair } from '@eso-mtls/test-kit/pki';
import { probe } from '@eso-mtls/test-kit/tls-probe';

let bins: Record<'reloading-provider' | 'reloading-client', string>;
beforeAll(async () => {
  bins = await buildGoCommands(['reloading-provider', 'reloading-client']);
}, BUILD_TIMEOUT);
afterAll(() => {
  if (bins) rmSync(dirname(bins['reloading-provider']), { recursive: true, force: true });
});

/** One JSON line of a Go program: a watcher event, or the client's progress. */
interface Line {
  readonly event: string;
  readonly reason?: string;
  readonly detail?: string;
  readonly serial?: string;
  readonly cas?: number;
  readonly calls?: number;
  readonly failed?: number;
  readonly failures?: string[];
}
const parse = (line: string): Line | undefined => (line.startsWith('{') ? (JSON.parse(line) as Line) : undefined);
const WATCHER_EVENTS = new Set(['loaded', 'reloaded', 'refused']);

/** Reads a Go program's watcher events (loaded, reloaded, refused) one at a time, in order, skipping other lines. */
class WatcherEvents {
  private next = 0;
  constructor(private readonly program: GoProgram) {}
  async take(): Promise<Line> {
    const { line, index } = await this.program.nextLine((l) => WATCHER_EVENTS.has(parse(l)?.event ?? ''), this.next);
    this.next = index + 1;
    return parse(line)!;
  }
  all(): Line[] {
    return this.program.lines.flatMap((l) => parse(l) ?? []).filter((e) => WATCHER_EVENTS.has(e.event));
  }
}

const leafSerialOf = (leaf: KeyPair): bigint => serial(new X509Certificate(leaf.cert).serialNumber);
const POD = ['-cert-layout', 'pod-certificate'];

describe('the Go provider and client reading pod-certificate projections (-cert-layout=pod-certificate)', () => {
  let root: string;
  let dirs: { server: string; client: string };
  let cas: [KeyPair, KeyPair];
  let leaves: { server: KeyPair[]; client: KeyPair[] };
  let provider: GoProgram;
  let client: GoProgram;
  let providerEvents: WatcherEvents;
  let clientEvents: WatcherEvents;
  let port: number;

  /** What each folder holds now, so each test starts from where the one before left it (or beforeAll, when filtered out). */
  const held = new Map<string, { leaf: KeyPair; anchors: readonly KeyPair[] }>();
  const pemOf = (anchors: readonly KeyPair[]) => anchors.map((ca) => ca.cert).join('');

  /** Writes a folder as the kubelet writes a podCertificate + clusterTrustBundle projection. */
  async function project(dir: string, leaf: KeyPair, anchors: readonly KeyPair[]): Promise<void> {
    await writeAtomically(dir, podCertificateFiles(credentialsPem(leaf), pemOf(anchors)));
    held.set(dir, { leaf, anchors });
  }

  /** The serial the Go provider presents to a new handshake now, made with `clientLeaf` trusting `anchors`. */
  async function servedSerial(clientLeaf: KeyPair, anchors: readonly KeyPair[]): Promise<bigint> {
    const outcome = await probe(port, { ca: pemOf(anchors), cert: clientLeaf.cert, key: clientLeaf.key, servername: SERVER_NAME });
    if (!outcome.accepted || outcome.serverSerial === undefined) throw new Error(`probe refused: ${JSON.stringify(outcome)}`);
    return serial(outcome.serverSerial);
  }

  /**
   * Waits for `reports` more progress lines of the Go client (one per 100 ms at the least, so
   * several of the provider's 300 ms connection ages pass) and checks its calls went on and none failed.
   */
  async function callsGoOn(reports = 5): Promise<void> {
    let from = client.lines.length;
    let first: Line | undefined;
    for (let i = 0; i < reports; i++) {
      const { line, index } = await client.nextLine((l) => parse(l)?.event === 'progress', from, 20_000);
      from = index + 1;
      first ??= parse(line);
      const now = parse(line)!;
      expect(now).toMatchObject({ failed: 0, failures: [] });
      if (i === reports - 1) expect(now.calls!).toBeGreaterThan(first!.calls!);
    }
  }

  beforeAll(async () => {
    cas = [await opensslP256Ca('pod-ca-1'), await opensslP256Ca('pod-ca-2')];
    // Key types the kubelet can generate, a different one per leaf.
    leaves = {
      server: [
        await opensslPodLeaf(cas[0], 'ECDSAP256', 'server'),
        await opensslPodLeaf(cas[0], 'ECDSAP384', 'server'),
        await opensslPodLeaf(cas[1], 'ED25519', 'server'),
      ],
      client: [
        await opensslPodLeaf(cas[0], 'ED25519', 'client'),
        await opensslPodLeaf(cas[0], 'ECDSAP256', 'client'),
        await opensslPodLeaf(cas[1], 'ECDSAP384', 'client'),
      ],
    };
    root = mkdtempSync(join(tmpdir(), 'go-pod-certificates-'));
    dirs = { server: join(root, 'server'), client: join(root, 'client') };
    Object.values(dirs).forEach((d) => mkdirSync(d));
    await project(dirs.server, leaves.server[0]!, [cas[0]]);
    await project(dirs.client, leaves.client[0]!, [cas[0]]);

    provider = spawnGoProgram(bins['reloading-provider'], [
      ...['-addr', '127.0.0.1:0', '-health-addr', '127.0.0.1:0', '-cert-dir', dirs.server, ...POD, '-poll', '200ms'],
      ...['-max-connection-age', '300ms', '-max-connection-age-grace', '5s'],
    ]);
    providerEvents = new WatcherEvents(provider);
    port = Number((await provider.nextLine((l) => l.startsWith('LISTENING '), 0)).line.split(':').pop());
    const loaded = await providerEvents.take();
    expect(loaded).toMatchObject({ event: 'loaded', cas: 1 });
    expect(serial(loaded.serial!)).toBe(leafSerialOf(leaves.server[0]!));

    // Run as in a pod: progress lines while it runs, stopped by SIGTERM.
    client = spawnGoProgram(bins['reloading-client'], [
      ...['-addr', ADDRESS, '-connect-to', `127.0.0.1:${port}`, '-cert-dir', dirs.client, ...POD, '-poll', '200ms'],
      ...['-report-every', '100ms'],
    ]);
    clientEvents = new WatcherEvents(client);
    await client.nextLine((l) => l === 'READY', 0);
    const clientLoaded = await clientEvents.take();
    expect(clientLoaded).toMatchObject({ event: 'loaded', cas: 1 });
    expect(serial(clientLoaded.serial!)).toBe(leafSerialOf(leaves.client[0]!));
  }, 60_000);

  afterAll(async () => {
    await client?.terminate();
    await provider?.terminate();
    if (root) rmSync(root, { recursive: true, force: true });
  });

  /** Waits for `program`'s next watcher event to be a reload to `leaf` with `cas` CAs. */
  async function reloaded(events: WatcherEvents, leaf: KeyPair, cas: number): Promise<void> {
    const e = await events.take();
    expect(e).toMatchObject({ event: 'reloaded', cas });
    expect(serial(e.serial!)).toBe(leafSerialOf(leaf));
  }

  it(
    'leaf rotations on both sides and an overlap CA rotation: every new leaf taken, 0 failed calls',
    async () => {
      const [ca1, ca2] = cas;
      const { server, client: clientLeaves } = leaves;
      await callsGoOn();

      await project(dirs.server, server[1]!, [ca1]); // the kubelet renews the provider's pod certificate
      await reloaded(providerEvents, server[1]!, 1);
      expect(await servedSerial(clientLeaves[0]!, [ca1])).toBe(leafSerialOf(server[1]!));
      await callsGoOn();

      await project(dirs.client, clientLeaves[1]!, [ca1]); // and the client's
      await reloaded(clientEvents, clientLeaves[1]!, 1);
      await callsGoOn();

      // Prepare: the next CA joins both trust bundles.
      await project(dirs.server, server[1]!, [ca1, ca2]);
      await reloaded(providerEvents, server[1]!, 2);
      await project(dirs.client, clientLeaves[1]!, [ca1, ca2]);
      await reloaded(clientEvents, clientLeaves[1]!, 2);
      await callsGoOn();

      // Activate: both leaves re-issued by the new CA.
      await project(dirs.server, server[2]!, [ca1, ca2]);
      await reloaded(providerEvents, server[2]!, 2);
      await project(dirs.client, clientLeaves[2]!, [ca1, ca2]);
      await reloaded(clientEvents, clientLeaves[2]!, 2);
      await callsGoOn();

      // Retire: the old CA leaves both bundles. From here the provider refuses any client leaf of
      // the old CA, so calls that go on over new connections prove the Go client presents its new leaf.
      await project(dirs.server, server[2]!, [ca2]);
      await reloaded(providerEvents, server[2]!, 1);
      await project(dirs.client, clientLeaves[2]!, [ca2]);
      await reloaded(clientEvents, clientLeaves[2]!, 1);
      expect((await probe(port, { ca: ca2.cert, cert: clientLeaves[1]!.cert, key: clientLeaves[1]!.key, servername: SERVER_NAME })).accepted).toBe(false);
      expect(await servedSerial(clientLeaves[2]!, [ca2])).toBe(leafSerialOf(server[2]!));
      await callsGoOn();

      expect([...providerEvents.all(), ...clientEvents.all()].filter((e) => e.event === 'refused')).toEqual([]);
    },
    TEST_TIMEOUT,
  );

  it(
    'a credential bundle that does not split into one key and a chain is refused once with its reason; the last good certificate keeps serving',
    async () => {
      const { leaf: current, anchors: serverAnchors } = held.get(dirs.server)!;
      const { leaf: clientLeaf, anchors: clientAnchors } = held.get(dirs.client)!;
      const anchors = pemOf(serverAnchors);
      const other = leaves.server.find((l) => l !== current)!; // a leaf and key of another pair
      const served = leafSerialOf(current);
      const bundle = credentialsPem(current);
      const cases: [reason: string, detail: string, files: Record<string, string>][] = [
        [
          'garbage_pem',
          'credentials.pem: PEM block 2 is a PRIVATE KEY; only CERTIFICATE blocks may follow the PRIVATE KEY block',
          podCertificateFiles(current.key + other.key + current.cert, anchors),
        ],
        ['missing_certificate', 'credentials.pem holds a PRIVATE KEY block but no CERTIFICATE block', podCertificateFiles(current.key, anchors)],
        [
          'missing_key',
          'credentials.pem holds no PKCS#8 PRIVATE KEY block (found CERTIFICATE); the kubelet writes the key first, then the certificates',
          podCertificateFiles(current.cert, anchors),
        ],
        [
          'garbage_pem',
          'credentials.pem must begin with its PRIVATE KEY block; block 1 is a CERTIFICATE, the key is block 2',
          podCertificateFiles(current.cert + current.key, anchors),
        ],
        [
          'garbage_pem',
          'credentials.pem is not a PEM credential bundle: what follows block 1 is not a bare PEM block',
          podCertificateFiles(bundle.slice(0, bundle.length - 40), anchors),
        ],
        [
          'key_mismatch',
          'the PRIVATE KEY block of credentials.pem is not the private key of credentials.pem',
          podCertificateFiles(other.key + current.cert, anchors),
        ],
        // After another case: the same problem twice in a row is one refusal.
        [
          'garbage_pem',
          'credentials.pem is not a PEM credential bundle: what follows block 1 is not a bare PEM block',
          // The leaf's END line lost, a good block after it: pem.Decode alone would skip to that one.
          podCertificateFiles(current.key + current.cert.replace(/-----END CERTIFICATE-----\n$/, '') + anchors, anchors),
        ],
        ['empty', 'credentials.pem and ca.crt are both empty; the kubelet has not written the pod certificate yet', podCertificateFiles('', '')],
        ['not_found', 'project a podCertificate credential bundle at credentials.pem and a clusterTrustBundle at ca.crt there', { 'ca.crt': anchors }],
      ];
      for (const [reason, detail, files] of cases) {
        await writeAtomically(dirs.server, files);
        const refused = await providerEvents.take();
        expect(refused).toMatchObject({ event: 'refused', reason });
        expect(refused.detail).toContain(detail);
        expect(serial(refused.serial!)).toBe(served);
        expect(await servedSerial(clientLeaf, clientAnchors)).toBe(served);
        // The same bad bytes again (a new ..data swap, and the 200 ms poll meanwhile) are no new
        // refusal: the next event is the next case's, or the repair's.
        await writeAtomically(dirs.server, files);
      }
      // The client refuses the same way and keeps presenting its last good leaf.
      const otherKey = leaves.client.find((l) => l !== clientLeaf)!.key;
      await writeAtomically(dirs.client, podCertificateFiles(clientLeaf.key + otherKey + clientLeaf.cert, pemOf(clientAnchors)));
      expect(await clientEvents.take()).toMatchObject({ event: 'refused', reason: 'garbage_pem' });

      // The next good pod certificate, from the CA that issued the last good one.
      const issuer = cas.find((ca) => new X509Certificate(current.cert).checkIssued(new X509Certificate(ca.cert)))!;
      const repaired = await opensslPodLeaf(issuer, 'ECDSAP256', 'server');
      await project(dirs.server, repaired, serverAnchors);
      await reloaded(providerEvents, repaired, serverAnchors.length);
      expect(await servedSerial(clientLeaf, clientAnchors)).toBe(leafSerialOf(repaired));
      await callsGoOn();

      expect(providerEvents.all().filter((e) => e.event === 'refused')).toHaveLength(cases.length);
      expect(await client.terminate()).toBe(0);
      const summary = parse(client.lines.find((l) => parse(l)?.event === 'summary')!)!;
      expect(summary).toMatchObject({ failed: 0, failures: [] });
      expect(summary.calls!).toBeGreaterThan(0);
    },
    TEST_TIMEOUT,
  );
});

describe('-cert-layout', () => {
  it.each(['reloading-provider', 'reloading-client'] as const)('%s refuses a layout it does not know, naming the ones it does', async (name) => {
    const program = spawnGoProgram(bins[name], ['-cert-layout', 'credential-bundle', '-cert-dir', tmpdir()]);
    await expect(program.nextLine(() => true, 0)).rejects.toThrow('cert-layout="credential-bundle" is not one of secret, pod-certificate');
    expect(await program.stop()).toBe(1);
  });
});
