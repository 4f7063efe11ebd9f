/**
 * The upstream CA on a real kube-apiserver with the real cert-manager (testing/kit's helper): N
 * namespaces with a labelled Service, the adapter's CA an intermediate from a CA ClusterIssuer
 * holding an organisation root. Measured in one run:
 *  - first issuance: adapter start until every provider Secret holds a leaf chained to the root;
 *  - renewal under the same anchor (`eso-mtls.io/rotate` on the CA Secret): until every leaf is
 *    under the new intermediate, with the CA, leaf and bundle writes it took;
 *  - a changed anchor (the issuer now signs with a second root, published in the anchors first):
 *    until every leaf is under it and the old root has left every bundle, with its writes, against
 *    the propagationDelay the overlap waits.
 * Failed calls are not measured here: that takes providers and ESO's pods on a node.
 *
 *   npm run bench -- upstream-renewal        (UPSTREAM_NAMESPACES, default 200)
 */
import { ROTATE_ANNOTATION, type SecretWrite, hours, seconds, splitPemCertificates } from '@eso-mtls/core';
import { KubeRestClient, ProviderCertificateAdapter, connectionFromKubeConfig, corePath } from '@eso-mtls/kubernetes';
import type { V1Secret } from '@kubernetes/client-node';
import { startControlPlane } from '../testing/envtest/src/index.js';
import { installCertManagerCrds, startCertManager } from '../testing/kit/src/cert-manager-process.js';
import { opensslP256Ca } from '../testing/kit/src/pod-certificates.js';
import { ESO, createProviderNamespaces } from './kubernetes.bench.js';

const PROPAGATION = seconds(10);
const GIVE_UP_MS = 20 * 60_000;
const b64 = (s: string): string => Buffer.from(s).toString('base64');

/** Writes of one step, by kind. */
type Writes = Record<SecretWrite['kind'], number>;

/** One measured step. */
interface Step {
  readonly seconds: number;
  readonly writes: Writes;
  readonly phases: readonly string[];
}

/** What {@link runUpstreamRenewalBenchmark} measures. */
export interface UpstreamRenewalBenchmark {
  readonly namespaces: number;
  readonly propagationSeconds: number;
  readonly first: Step;
  readonly sameAnchor: Step;
  readonly newAnchor: Step;
}

/** Polls `done` every 250 ms until true; throws after GIVE_UP_MS. */
async function until(what: string, done: () => Promise<boolean>): Promise<void> {
  const end = Date.now() + GIVE_UP_MS;
  while (!(await done())) {
    if (Date.now() > end) throw new Error(`gave up waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 250));
  }
}

export async function runUpstreamRenewalBenchmark(count = Number(process.env.UPSTREAM_NAMESPACES ?? 200)): Promise<UpstreamRenewalBenchmark> {
  const plane = await startControlPlane();
  const admin = new KubeRestClient(await connectionFromKubeConfig(plane.adminKubeConfig));
  const certManager = await (async () => {
    await installCertManagerCrds(plane);
    return startCertManager(plane);
  })();
  let adapter: ProviderCertificateAdapter | undefined;
  try {
    const [root, second] = [await opensslP256Ca('bench organisation root'), await opensslP256Ca('bench organisation root 2027')];
    const issuerSecret = { metadata: { name: 'org-ca' }, type: 'kubernetes.io/tls', data: { 'tls.crt': b64(root.cert), 'tls.key': b64(root.key) } };
    await admin.create(corePath('secrets', 'kube-system'), issuerSecret);
    await admin.create('/apis/cert-manager.io/v1/clusterissuers', {
      apiVersion: 'cert-manager.io/v1',
      kind: 'ClusterIssuer',
      metadata: { name: 'org-ca' },
      spec: { ca: { secretName: 'org-ca' } },
    });
    await admin.create(corePath('namespaces'), { metadata: { name: ESO } });
    await admin.create(corePath('secrets', ESO), { metadata: { name: 'org-roots' }, data: { 'ca.crt': b64(root.cert) } });
    const namespaces = Array.from({ length: count }, (_, i) => `up-${i}`);
    await createProviderNamespaces(admin, namespaces);

    const writes: SecretWrite[] = [];
    let mark = 0;
    const stepOf = (started: number): Step => {
      const taken = writes.slice(mark);
      mark = writes.length;
      const tally: Writes = { ca: 0, serverLeaf: 0, clientLeaf: 0, bundle: 0 };
      for (const w of taken) tally[w.kind]++;
      return { seconds: (Date.now() - started) / 1000, writes: tally, phases: taken.flatMap((w) => w.phases ?? []) };
    };
    const intermediateOf = async (ns: string): Promise<string | undefined> => {
      const s = await admin.get<V1Secret>(corePath('secrets', ns, 'external-secrets-provider-tls')).catch(() => undefined);
      return s?.data?.['tls.crt'] && splitPemCertificates(Buffer.from(s.data['tls.crt'], 'base64').toString())[1];
    };
    const caIntermediate = async (): Promise<string> => {
      const ca = await admin.get<V1Secret>(corePath('secrets', ESO, 'eso-provider-ca-internal'));
      return splitPemCertificates(Buffer.from(ca.data!['ca.crt']!, 'base64').toString())[0]!;
    };
    const allUnder = async (intermediate: string): Promise<boolean> => {
      for (const ns of namespaces) if ((await intermediateOf(ns)) !== intermediate) return false;
      return true;
    };

    let started = Date.now();
    adapter = await ProviderCertificateAdapter.create({
      kubeConfig: plane.adminKubeConfig,
      policy: { esoNamespace: ESO, propagationDelay: PROPAGATION, maxConnectionAge: PROPAGATION },
      caSource: {
        kind: 'issuer',
        issuer: { kind: 'ClusterIssuer', name: 'org-ca', group: 'cert-manager.io' },
        trustAnchors: { kind: 'Secret', name: 'org-roots', key: 'ca.crt' },
        requestDeadline: hours(1),
      },
      hooks: { onWrite: (w) => writes.push(w) },
    });
    await adapter.start();
    await until('the first intermediate', async () => (await intermediateOf(namespaces.at(-1)!)) !== undefined && allUnder(await caIntermediate()));
    const first = stepOf(started);

    started = Date.now();
    const before = await caIntermediate();
    await admin.mergePatch(corePath('secrets', ESO, 'eso-provider-ca-internal'), { metadata: { annotations: { [ROTATE_ANNOTATION]: 'bench-renew' } } });
    await until('the renewed intermediate', async () => {
      const now = await caIntermediate();
      return now !== before && allUnder(now);
    });
    const sameAnchor = stepOf(started);

    // The organisation publishes its new root, then its issuer signs with it.
    started = Date.now();
    await admin.mergePatch(corePath('secrets', ESO, 'org-roots'), { data: { 'ca.crt': b64(root.cert + second.cert) } });
    await admin.mergePatch(corePath('secrets', 'kube-system', 'org-ca'), { data: { 'tls.crt': b64(second.cert), 'tls.key': b64(second.key) } });
    const renewed = await caIntermediate();
    await admin.mergePatch(corePath('secrets', ESO, 'eso-provider-ca-internal'), { metadata: { annotations: { [ROTATE_ANNOTATION]: 'bench-new-root' } } });
    await until('the intermediate under the new root, and the old root retired', async () => {
      const now = await caIntermediate();
      if (now === renewed || !(await allUnder(now))) return false;
      const s = await admin.get<V1Secret>(corePath('secrets', namespaces[0]!, 'external-secrets-provider-tls'));
      return splitPemCertificates(Buffer.from(s.data!['ca.crt']!, 'base64').toString()).length === 1;
    });
    const newAnchor = stepOf(started);
    return { namespaces: count, propagationSeconds: PROPAGATION / 1000, first, sameAnchor, newAnchor };
  } finally {
    await adapter?.stop();
    await certManager.stop();
    admin.close();
    await plane.stop();
  }
}

export function formatUpstreamRenewalBenchmark(b: UpstreamRenewalBenchmark): string {
  const row = (name: string, s: Step): string =>
    `| ${name} | ${s.seconds.toFixed(1)} s | ${s.writes.ca} (${[...new Set(s.phases)].join(', ') || '-'}) | ${s.writes.serverLeaf + s.writes.clientLeaf} | ${s.writes.bundle} |`;
  return [
    `## Upstream CA: ${b.namespaces} namespaces, real kube-apiserver and cert-manager (propagationDelay ${b.propagationSeconds} s)`,
    '',
    '| step | time | CA Secret writes (phases) | leaf writes | bundle-only writes |',
    '|---|---|---|---|---|',
    row('first intermediate, every leaf issued', b.first),
    row('renewed under the same anchor', b.sameAnchor),
    row('a new anchor through the overlap', b.newAnchor),
  ].join('\n');
}
