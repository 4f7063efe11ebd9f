/**
 * Secret mode beside a backlog of PodCertificateRequests (issue 23, item 9), on a real
 * kube-apiserver with the Node authorizer and NodeRestriction. One adapter in both modes (as a
 * migration runs it), in this process. Baseline: with no request pending, one Service a
 * `paceMs` is labelled (created labelled) in a namespace of its own, each timed from the create
 * call to the watch seeing its provider Secret. Then, with no adapter running, the node makes
 * `perPod` requests for each of `pods` pods (20 x 200 = 4,000, as in the issue); a fresh adapter
 * starts, and while it drains them Services are labelled at the same pace and timed the same way,
 * until the last request is decided.
 *
 *   npm run bench -- pod-backlog
 *   node --import ./scripts/register-ts.mjs bench/pod-backlog.bench.ts [pods] [perPod]
 */
import 'reflect-metadata';
import { pathToFileURL } from 'node:url';
import { PROVIDER_LABEL } from '@eso-mtls/core';
import { KubeRestClient, type PodStage, ProviderCertificateAdapter, connectionFromKubeConfig, corePath } from '@eso-mtls/kubernetes';
import type { KubeConfig } from '@kubernetes/client-node';
import { nodeIdentity, startControlPlane } from '../testing/envtest/src/index.js';
import { type KubeletPod, PodCertificateKubelet } from '../testing/kubelet/index.js';
import { ADAPTER_LOGGER, ESO, pool, providerSecretInformer } from './kubernetes.bench.js';
import { type Spread, spread } from './spread.js';

const SERVER_SIGNER = 'eso-mtls.io/provider-server';
const POD_CERTIFICATES = { serverSignerName: SERVER_SIGNER, clientSignerName: 'eso-mtls.io/eso-client', maxValidity: 86_400_000 };
const NODE = 'bench-node';
const BACKLOG_NS = 'backlog';
/** The node's create calls in flight while it builds the backlog. */
const CONCURRENCY = 16;
/** Services labelled at most, per phase. */
const MAX_PROBES = 400;

/** Pod-certificate decisions, counted by the adapter's hook as each status write returns: a watch of every request would share the bench's process. */
export interface PodDecisions {
  issued: number;
  refused: number;
  /** Called after each count. */
  onDecided: () => void;
}

/** An adapter in both modes whose pod-certificate hook counts each decision into `decisions` (a failed status write is retried, not counted). */
export function countingPodAdapter(kubeConfig: KubeConfig, decisions: PodDecisions): Promise<ProviderCertificateAdapter> {
  return ProviderCertificateAdapter.create({
    kubeConfig,
    policy: { esoNamespace: ESO },
    logger: ADAPTER_LOGGER,
    podCertificates: POD_CERTIFICATES,
    hooks: {
      onPodCertificateRequest: (_signer, result, reason) => {
        if (reason === 'StatusWriteFailed') return;
        if (result === 'issued') decisions.issued++;
        else decisions.refused++;
        decisions.onDecided();
      },
    },
  });
}

/** What {@link runPodBacklogBenchmark} measures. */
export interface PodBacklogBenchmark {
  readonly pods: number;
  readonly perPod: number;
  readonly paceMs: number;
  /** Service labelled → its Secret seen, in ms, with no request pending. */
  readonly baseline: Spread;
  /** The same while the backlog drains. */
  readonly withBacklog: Spread;
  /** Fresh adapter start → the node saw the last request decided. */
  readonly drainSeconds: number;
  readonly issued: number;
  readonly refused: number;
  /** Requests still pending when the first probe's Secret was seen. */
  readonly pendingAtFirstSecret: number;
  readonly backlogSetupSeconds: number;
  /** Each backlog request's time in the signer, by stage. */
  readonly stages: Record<PodStage, Spread>;
}

const STAGES: readonly PodStage[] = ['queueWait', 'podRead', 'sign', 'statusWrite'];

const progress = (what: string): boolean => process.stderr.write(`bench: pod-backlog: ${what}\n`);

/** Labels one Service a `paceMs` in namespaces `<prefix>-<i>` while `more()`; resolves with each label → Secret latency. */
async function probe(
  admin: KubeRestClient,
  secretSeen: Map<string, (at: number) => void>,
  prefix: string,
  paceMs: number,
  more: (i: number) => boolean,
  onSeen: () => void = () => undefined,
): Promise<number[]> {
  const waits: Promise<number>[] = [];
  for (let i = 0; i < MAX_PROBES && more(i); i++) {
    const ns = `${prefix}-${i}`;
    await admin.create(corePath('namespaces'), { metadata: { name: ns } });
    const seen = new Promise<number>((r) => secretSeen.set(ns, r));
    const sent = performance.now();
    await admin.create(corePath('services', ns), {
      metadata: { name: 'provider', labels: { [PROVIDER_LABEL]: 'true' } },
      spec: { selector: { app: 'provider' }, ports: [{ port: 8443 }] },
    });
    waits.push(
      seen.then((at) => {
        onSeen();
        return at - sent;
      }),
    );
    await new Promise((r) => setTimeout(r, Math.max(0, paceMs - (performance.now() - sent))));
  }
  return Promise.all(waits);
}

/** Baseline, then the backlog; see the file's comment. */
export async function runPodBacklogBenchmark(pods = 20, perPod = 200, paceMs = 250): Promise<PodBacklogBenchmark> {
  const plane = await startControlPlane({ nodeAuthorization: true, identities: [nodeIdentity(NODE), { name: 'bench-adapter', groups: ['system:masters'] }] });
  const decisions: PodDecisions = { issued: 0, refused: 0, onDecided: () => undefined };
  const adapter = (): Promise<ProviderCertificateAdapter> => countingPodAdapter(plane.kubeconfigFor('bench-adapter'), decisions);
  let kubelet: PodCertificateKubelet | undefined;
  const admin = new KubeRestClient(await connectionFromKubeConfig(plane.adminKubeConfig), { maxSockets: CONCURRENCY });
  const secrets = providerSecretInformer(admin);
  try {
    kubelet = await PodCertificateKubelet.register({ admin: plane.adminKubeConfig, node: plane.kubeconfigFor(`system:node:${NODE}`), nodeName: NODE });
    const node = kubelet;
    const secretSeen = new Map<string, (at: number) => void>();
    secrets.onChange(({ type, object }) => {
      const ns = object.metadata?.namespace ?? '';
      if (type !== 'DELETED' && object.data?.['tls.crt']) secretSeen.get(ns)?.(performance.now());
    });
    secrets.start();
    await secrets.synced;
    await admin.create(corePath('namespaces'), { metadata: { name: ESO } });
    await admin.create(corePath('namespaces'), { metadata: { name: BACKLOG_NS } });
    await admin.create(corePath('services', BACKLOG_NS), {
      metadata: { name: 'provider', labels: { [PROVIDER_LABEL]: 'true' } },
      spec: { clusterIP: 'None', selector: { app: 'provider' }, ports: [{ port: 8443 }] },
    });
    const running: KubeletPod[] = [];
    await pool(
      Array.from({ length: pods }, (_, i) => `provider-${i}`),
      CONCURRENCY,
      async (name) =>
        running.push(
          await node.runPod({
            namespace: BACKLOG_NS,
            name,
            serviceAccountName: 'provider',
            labels: { app: 'provider' },
            podCertificate: { signerName: SERVER_SIGNER, keyType: 'ECDSAP256', maxExpirationSeconds: 86_400 },
          }),
        ),
    );

    progress('baseline: Services labelled with no request pending');
    const first = await adapter();
    await first.start();
    await first.whenSettled();
    const baselineCount = 40;
    const baseline = await probe(admin, secretSeen, 'baseline', paceMs, (i) => i < baselineCount);
    await first.stop();

    progress(`backlog: ${pods} pods x ${perPod} requests made as the node, no adapter running`);
    const setupStart = performance.now();
    const specs = running.flatMap((pod) => Array.from({ length: perPod }, () => pod));
    await pool(specs, CONCURRENCY, (pod) => node.requestCertificate(pod));
    const backlogSetupSeconds = (performance.now() - setupStart) / 1000;
    // The node's part is done: its watch of every request and chain would share this process with the adapter.
    await node.stop();
    kubelet = undefined;

    progress('backlog: fresh adapter; Services labelled while it drains');
    let drainedAt = NaN;
    decisions.issued = decisions.refused = 0;
    const decided = (): number => decisions.issued + decisions.refused;
    const drained = new Promise<void>((r) => {
      decisions.onDecided = () => {
        if (decided() < specs.length) return;
        drainedAt = performance.now();
        r();
      };
    });
    const start = performance.now();
    const second = await adapter();
    await second.start();
    let pendingAtFirstSecret = NaN;
    const timed = probe(
      admin,
      secretSeen,
      'backlog',
      paceMs,
      () => Number.isNaN(drainedAt),
      () => {
        if (Number.isNaN(pendingAtFirstSecret)) pendingAtFirstSecret = specs.length - decided();
      },
    );
    await drained;
    const withBacklog = await timed;
    const stages = Object.fromEntries(STAGES.map((stage) => [stage, spread(second.podSigner!.stages.of(stage))])) as Record<PodStage, Spread>;
    await second.stop();
    return {
      pods,
      perPod,
      paceMs,
      baseline: spread(baseline),
      withBacklog: spread(withBacklog),
      drainSeconds: (drainedAt - start) / 1000,
      issued: decisions.issued,
      refused: decisions.refused,
      pendingAtFirstSecret,
      backlogSetupSeconds,
      stages,
    };
  } finally {
    await secrets.stop();
    admin.close();
    await kubelet?.stop();
    await plane.stop();
  }
}

/** The figures as a markdown table. */
export function formatPodBacklogBenchmark(r: PodBacklogBenchmark): string {
  const ms = (l: Spread): string => `${l.p50.toFixed(0)} / ${l.p99.toFixed(0)} / ${l.max.toFixed(0)} ms (${l.n} Services)`;
  return [
    `| Secret mode beside ${r.pods * r.perPod} pending PodCertificateRequests (${r.pods} pods x ${r.perPod}), one Service labelled every ${r.paceMs} ms | |`,
    '|---|---:|',
    `| label → Secret, no request pending, p50 / p99 / max | ${ms(r.baseline)} |`,
    `| label → Secret while the backlog drains, p50 / p99 / max | ${ms(r.withBacklog)} |`,
    `| requests still pending when the first Service's Secret was seen | ${r.pendingAtFirstSecret} |`,
    `| backlog: adapter start → last request decided | ${r.drainSeconds.toFixed(1)} s (${r.issued} issued, ${r.refused} refused) |`,
    `| backlog: made as the node, with no adapter (not timed above) | ${r.backlogSetupSeconds.toFixed(1)} s |`,
    ...STAGES.map(
      (stage) =>
        `| backlog, in the signer: ${stage}, p50 / p99 / max (${r.stages[stage].n} requests) | ${r.stages[stage].p50.toFixed(1)} / ${r.stages[stage].p99.toFixed(1)} / ${r.stages[stage].max.toFixed(1)} ms |`,
    ),
  ].join('\n');
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) {
  const [pods, perPod] = process.argv.slice(2).map(Number);
  console.log(formatPodBacklogBenchmark(await runPodBacklogBenchmark(pods || undefined, perPod || undefined)));
}
