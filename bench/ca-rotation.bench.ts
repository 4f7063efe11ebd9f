/**
 * A forced overlap CA rotation at scale, against a real kube-apiserver: N labelled Services in N
 * namespaces converge, then the `eso-mtls.io/rotate` annotation on the CA Secret starts a rotation
 * (prepare, activate, retire). Measured from outside, by watching the Secrets: when each phase was
 * written, how long until every bundle held the next CA, every leaf was signed by it, and every
 * bundle had dropped the old one; Secret writes per namespace and requests by verb (audit log);
 * the adapter's CPU and RSS; and whether the write rate starves watch processing, two ways: every
 * second, a labelled Service is annotated and the time until the adapter's own Service cache holds
 * the change is taken (watch lag); and once the next CA signs, a new labelled Service is created
 * every few seconds until every leaf is re-issued, and the time until its Secret holds a valid leaf
 * is taken (end to end). Only then: a new Secret's bundle write counts as a bundle written and
 * postpones activation by propagationDelay, and a new leaf postpones retirement (see ca-phases.ts).
 *
 *   node --import ./scripts/register-ts.mjs bench/ca-rotation.bench.ts [namespaces]
 */
import 'reflect-metadata';
import { X509Certificate } from 'node:crypto';
import { PROVIDER_LABEL, PROVIDER_SECRET_NAME, ROTATE_ANNOTATION, seconds } from '@eso-mtls/core';
import { Informer, KubeRestClient, type ListPage, connectionFromKubeConfig, corePath } from '@eso-mtls/kubernetes';
import type { V1Secret } from '@kubernetes/client-node';
import { pathToFileURL } from 'node:url';
import { startControlPlane } from '../testing/envtest/src/index.js';
import { AdapterProcess, ESO, type MemoryBreakdown, createProviderNamespaces, formatMemory, tallyAudit } from './kubernetes.bench.js';

const CA_SECRET = 'eso-provider-ca-internal';
/** Short enough that the rotation's waits do not dominate; the phases still wait for every bundle. */
const POLICY = { propagationDelay: seconds(5), maxConnectionAge: seconds(5) };
const PROBE_EVERY_MS = 3000;

/** One probe: started this many seconds after the rotate annotation, and its lag in seconds. */
interface Probe {
  readonly at: number;
  readonly lag: number;
}

/** What {@link runCaRotationBenchmark} measures. Times are seconds since the rotate annotation. */
export interface CaRotationBenchmark {
  readonly namespaces: number;
  readonly convergeSeconds: number;
  /** The adapter after convergence, before the rotation, after a full GC. */
  readonly converged: MemoryBreakdown;
  /** The CA Secret written with next.crt (prepare), with the next CA in ca.crt (activate), and with retired.crt empty (retire). */
  readonly prepared: number;
  readonly activated: number;
  readonly retired: number;
  /** Every provider bundle holds the next CA; every leaf is signed by it; every bundle has dropped the old CA. */
  readonly allBundlesHoldNext: number;
  readonly allLeavesReissued: number;
  readonly allBundlesDropOld: number;
  /** Secret writes per provider namespace during the rotation, min and max, and in the ESO namespace. */
  readonly writesPerNamespace: { readonly min: number; readonly max: number };
  readonly esoNamespaceWrites: number;
  /** Adapter requests during the rotation, by verb and resource (audit log). */
  readonly requests: Record<string, number>;
  /** Adapter CPU during the rotation, and its RSS after. */
  readonly cpuSeconds: number;
  readonly rssMb: number;
  readonly maxRssMb: number;
  /** New labelled Service → its Secret holds a valid leaf: before the rotation, and each probe from activation on (start second, lag). */
  readonly idleProbeSeconds: number;
  readonly probes: readonly Probe[];
  /** Service annotated → the adapter's cache holds the change: before the rotation, and each probe during it. */
  readonly idleWatchLagSeconds: number;
  readonly watchLags: readonly Probe[];
}

const decode = (secret: V1Secret, key: string): string => Buffer.from(secret.data?.[key] ?? '', 'base64').toString();
const fingerprints = (pem: string): string[] =>
  (pem.match(/-----BEGIN CERTIFICATE-----[^-]+-----END CERTIFICATE-----/g) ?? []).map((p) => new X509Certificate(p).fingerprint256);

/** One run: converge N namespaces, rotate the CA, probe the watch lag throughout. */
export async function runCaRotationBenchmark(count = 10_000): Promise<CaRotationBenchmark> {
  const plane = await startControlPlane({ identities: [{ name: 'bench-adapter', groups: ['system:masters'] }], audit: true });
  try {
    const admin = new KubeRestClient(await connectionFromKubeConfig(plane.adminKubeConfig), { maxSockets: 16 });
    const namespaces = Array.from({ length: count }, (_, i) => `bench-${i}`);
    await createProviderNamespaces(admin, namespaces);
    const watched = corePath('services', 'watch-probe', 'provider');
    await admin.create(corePath('namespaces'), { metadata: { name: 'watch-probe' } });
    await admin.create(corePath('services', 'watch-probe'), {
      metadata: { name: 'provider', labels: { [PROVIDER_LABEL]: 'true' } },
      spec: { ports: [{ port: 8443 }] },
    });

    // What every provider Secret holds, from outside: the fingerprints of its leaf's issuer and bundle.
    const leafIssuer = new Map<string, string>();
    const bundle = new Map<string, string[]>();
    const cas = new Map<string, X509Certificate>(); // by fingerprint: every CA the CA Secret ever held
    // Checked every 100 ms, not per event: a check walks all N namespaces.
    const until = async (done: () => boolean): Promise<void> => {
      while (!done()) await new Promise((r) => setTimeout(r, 100));
    };
    const onProviderSecret = (secret: V1Secret): void => {
      const ns = secret.metadata?.namespace ?? '';
      const leaf = decode(secret, 'tls.crt');
      if (!leaf) return;
      const cert = new X509Certificate(leaf);
      const issuer = [...cas.values()].find((ca) => cert.checkIssued(ca) && cert.verify(ca.publicKey));
      if (issuer && cert.checkHost(`provider.${ns}.svc`)) leafIssuer.set(ns, issuer.fingerprint256);
      bundle.set(ns, fingerprints(decode(secret, 'ca.crt')));
    };
    const slot = { active: '', next: '', retired: '' }; // fingerprints in the CA Secret as last seen
    const onCaSecret = (secret: V1Secret): void => {
      for (const key of ['ca.crt', 'next.crt'] as const) {
        const pem = decode(secret, key);
        if (pem) cas.set(new X509Certificate(pem).fingerprint256, new X509Certificate(pem));
      }
      slot.active = fingerprints(decode(secret, 'ca.crt'))[0] ?? '';
      slot.next = fingerprints(decode(secret, 'next.crt'))[0] ?? '';
      slot.retired = decode(secret, 'retired.crt');
    };
    const informer = (description: string, path: string, name: string, on: (s: V1Secret) => void): Informer<V1Secret> => {
      const i = new Informer<V1Secret>(
        {
          description,
          resource: 'secrets',
          list: (page) => admin.get<ListPage<V1Secret>>(path, { fieldSelector: `metadata.name=${name}`, ...page }),
          watchPath: path,
          fieldSelector: `metadata.name=${name}`,
        },
        { watch: admin, counter: admin.counter },
      );
      i.onChange((e) => e.type !== 'DELETED' && on(e.object));
      i.start();
      return i;
    };
    // The CA informer first, so that a leaf's issuer is known when the leaf arrives.
    const watchers = [informer('bench: CA Secret', corePath('secrets', ESO), CA_SECRET, onCaSecret)];
    watchers.push(informer('bench: provider Secrets', corePath('secrets'), PROVIDER_SECRET_NAME, onProviderSecret));
    await Promise.all(watchers.map((w) => w.synced));

    const { process: adapter } = await AdapterProcess.start(plane.identity('bench-adapter').kubeconfigPath, POLICY);
    const t0 = performance.now();
    await adapter.ask('start');
    const activeCa = (): string => slot.active;
    const all = (ns: readonly string[], ok: (n: string) => boolean): boolean => ns.every(ok);
    await until(() => slot.active !== '' && all(namespaces, (ns) => leafIssuer.get(ns) === activeCa()));
    const convergeSeconds = (performance.now() - t0) / 1000;
    await new Promise((r) => setTimeout(r, 2000)); // the follow-up reconcile finds nothing to do
    const converged = (await adapter.ask('memory')).memory as MemoryBreakdown;

    // A probe: a new namespace with a labelled Service; seconds until its Secret holds a valid leaf.
    let probeCount = 0;
    const probe = async (): Promise<number> => {
      const ns = `probe-${probeCount++}`;
      await admin.create(corePath('namespaces'), { metadata: { name: ns } });
      const start = performance.now();
      await admin.create(corePath('services', ns), { metadata: { name: 'provider', labels: { [PROVIDER_LABEL]: 'true' } }, spec: { ports: [{ port: 8443 }] } });
      await until(() => leafIssuer.has(ns));
      return (performance.now() - start) / 1000;
    };
    const idleProbeSeconds = await probe();
    // A watch-lag probe: annotate the watched Service; seconds until the adapter's cache has it.
    let annotations = 0;
    const watchLag = async (): Promise<number> => {
      const start = Date.now();
      const svc = await admin.mergePatch<{ metadata: { resourceVersion: string } }>(watched, {
        metadata: { annotations: { 'bench/probe': String(annotations++) } },
      });
      const { seenAt } = await adapter.ask(`seen watch-probe ${svc.metadata.resourceVersion}`);
      return ((seenAt as number) - start) / 1000;
    };
    const idleWatchLagSeconds = await watchLag();

    const before = await adapter.ask('report');
    const oldCa = activeCa();
    const requestedAt = Date.now();
    const r0 = performance.now();
    const since = (): number => (performance.now() - r0) / 1000;
    const ca = (await admin.get<V1Secret>(corePath('secrets', ESO, CA_SECRET)))!;
    ca.metadata!.annotations = { ...ca.metadata!.annotations, [ROTATE_ANNOTATION]: 'bench' };
    await admin.replace(corePath('secrets', ESO, CA_SECRET), ca);

    const probes: Probe[] = [];
    const watchLags: Probe[] = [];
    const running = { watch: true, create: true };
    const every = async (ms: number, into: Probe[], measure: () => Promise<number>, until: keyof typeof running): Promise<void> => {
      while (running[until]) {
        const at = since();
        into.push({ at, lag: await measure() });
        await new Promise((r) => setTimeout(r, Math.max(0, ms - (since() - at) * 1000)));
      }
    };
    const watching = every(1000, watchLags, watchLag, 'watch');
    const progress = setInterval(() => {
      const onNext = namespaces.filter((ns) => leafIssuer.get(ns) === slot.next || leafIssuer.get(ns) === slot.active).length;
      process.stderr.write(
        `bench: rotation at ${since().toFixed(0)} s: next ${slot.next.slice(0, 8) || '-'}, active ${slot.active.slice(0, 8)}, ${onNext} leaves on either, ${probes.length} probes\n`,
      );
    }, 10_000);
    const nextCa = (): string => slot.next;
    await until(() => nextCa() !== '');
    const prepared = since();
    const next = nextCa();
    await until(() => all(namespaces, (ns) => bundle.get(ns)?.includes(next) ?? false));
    const allBundlesHoldNext = since();
    await until(() => activeCa() === next);
    const activated = since();
    const probing = every(PROBE_EVERY_MS, probes, probe, 'create');
    await until(() => all(namespaces, (ns) => leafIssuer.get(ns) === next));
    const allLeavesReissued = since();
    // A new leaf also postpones retirement (maxConnectionAge after the last leaf replaced): stop creating.
    running.create = false;
    await until(() => slot.retired === '');
    const retired = since();
    await until(() => all(namespaces, (ns) => !(bundle.get(ns)?.includes(oldCa) ?? true)));
    const allBundlesDropOld = since();
    running.watch = false;
    await Promise.all([probing, watching]);
    clearInterval(progress);
    await new Promise((r) => setTimeout(r, 2000));
    const after = await adapter.ask('report');
    await adapter.ask('stop');
    adapter.close();
    await Promise.all(watchers.map((w) => w.stop()));
    admin.close();

    const audit = await tallyAudit(plane.auditLogPath!, 'bench-adapter', requestedAt);
    const perNamespace = namespaces.map((ns) => audit.secretWrites.get(ns) ?? 0);
    return {
      namespaces: count,
      convergeSeconds,
      converged,
      prepared,
      activated,
      retired,
      allBundlesHoldNext,
      allLeavesReissued,
      allBundlesDropOld,
      writesPerNamespace: { min: Math.min(...perNamespace), max: Math.max(...perNamespace) },
      esoNamespaceWrites: audit.secretWrites.get(ESO) ?? 0,
      requests: audit.requests,
      cpuSeconds: ((after.cpuMs as number) - (before.cpuMs as number)) / 1000,
      rssMb: (after.rssBytes as number) / 2 ** 20,
      maxRssMb: (after.maxRssBytes as number) / 2 ** 20,
      idleProbeSeconds,
      probes,
      idleWatchLagSeconds,
      watchLags,
    };
  } finally {
    await plane.stop();
  }
}

/** The figures as markdown. */
export function formatCaRotationBenchmark(b: CaRotationBenchmark): string {
  const s = (x: number): string => `${x.toFixed(1)} s`;
  const quantile = (p: readonly Probe[], q: number): number => p.map((x) => x.lag).sort((x, y) => x - y)[Math.floor((p.length - 1) * q)] ?? 0;
  const median = (p: readonly Probe[]): number => quantile(p, 0.5);
  const max = (p: readonly Probe[]): number => Math.max(...p.map((x) => x.lag));
  const list = (p: readonly Probe[]): string => p.map((x) => `${x.at.toFixed(0)} s: ${x.lag.toFixed(2)} s`).join('; ');
  const verbs = Object.entries(b.requests)
    .map(([k, n]) => `${k}: ${n}`)
    .join(', ');
  return [
    `| Forced overlap CA rotation, ${b.namespaces.toLocaleString('en')} provider namespaces (propagationDelay and maxConnectionAge 5 s) | |`,
    '|---|---:|',
    `| initial convergence | ${s(b.convergeSeconds)} |`,
    `| rotate annotation → prepare written (next CA in the CA Secret) | ${s(b.prepared)} |`,
    `| → every bundle holds the next CA | ${s(b.allBundlesHoldNext)} |`,
    `| → activate written | ${s(b.activated)} |`,
    `| → every leaf re-issued by the next CA | ${s(b.allLeavesReissued)} (${s(b.allLeavesReissued - b.activated)} after activation, ${((b.namespaces / (b.allLeavesReissued - b.activated)) | 0).toLocaleString('en')} leaves/s) |`,
    `| → retire written | ${s(b.retired)} |`,
    `| → every bundle has dropped the old CA | ${s(b.allBundlesDropOld)} |`,
    `| Secret writes per provider namespace during the rotation (min-max) | ${b.writesPerNamespace.min}-${b.writesPerNamespace.max} |`,
    `| Secret writes in the ESO namespace during the rotation | ${b.esoNamespaceWrites} |`,
    `| adapter CPU during the rotation | ${s(b.cpuSeconds)} |`,
    `| adapter RSS after the rotation (peak) | ${b.rssMb.toFixed(0)} MB (${b.maxRssMb.toFixed(0)} MB) |`,
    `| watch lag (Service annotated → in the adapter's cache), before the rotation | ${b.idleWatchLagSeconds.toFixed(3)} s |`,
    `| the same during the rotation: ${b.watchLags.length} probes, median / p99 / max | ${median(b.watchLags).toFixed(3)} s / ${quantile(b.watchLags, 0.99).toFixed(3)} s / ${max(b.watchLags).toFixed(3)} s |`,
    `| new labelled Service → valid Secret, before the rotation | ${s(b.idleProbeSeconds)} |`,
    `| the same from activation on: ${b.probes.length} probes, median / max | ${s(median(b.probes))} / ${s(max(b.probes))} |`,
    '',
    `Adapter requests during the rotation (audit log): ${verbs}.`,
    '',
    `Before the rotation: ${formatMemory(b.converged)}`,
    `New-Service probes (started at, lag): ${list(b.probes)}.`,
    `Watch-lag probes over 1 s (started at, lag): ${list(b.watchLags.filter((p) => p.lag > 1)) || 'none'}.`,
  ].join('\n');
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) {
  console.log(formatCaRotationBenchmark(await runCaRotationBenchmark(Number(process.argv[2] ?? 10_000))));
}
