// A burst of PodCertificateRequests made as the real node's kubelet, and /healthz probed from
// inside the node's namespaces as the kubelet probes it: what the liveness check of the real-node
// suite needs (issue 33, item 5: a burst made both controller replicas miss their probe).
import { spawn } from 'node:child_process';
import { createInterface } from 'node:readline';
import type { KubeConfig, V1Pod, V1ServiceAccount } from '@kubernetes/client-node';
import { Informer, KubeRestClient, type ListPage, certificatesPath, connectionFromKubeConfig, corePath, terminalCondition } from '@eso-mtls/kubernetes';
import { NODE_NAME, type RealCluster } from '@eso-mtls/devtools/cluster';
import { PodCertificateKubelet, type PodCertificateRequest } from '../../kubelet/index.js';

/** Create calls in flight, as the pod-certificate benches make them. */
const IN_FLIGHT = 16;

/** A burst being signed: resolves once every request of it is decided, with how each ended. */
export interface Burst {
  /** Requests made. */
  readonly made: number;
  /**
   * Resolves once each request is Issued, Denied or Failed, with the count of each; rejects, saying
   * how many were decided, when they are not all decided within `decideWithinMs`.
   */
  readonly decided: Promise<Record<string, number>>;
  /** Stops watching (also when `decided` never resolves). */
  stop(): Promise<void>;
}

/**
 * Makes `count` PodCertificateRequests for the running pod `namespace/podName` as the real node's
 * kubelet (user system:node:<node>, so the Node authorizer and NodeRestriction judge them), each
 * with a fresh key, `IN_FLIGHT` create calls at once, as a burst of pods starting together would.
 * Resolves once every create call returned; the signer decides them meanwhile and after.
 */
export async function requestBurst(
  cluster: RealCluster,
  admin: KubeConfig,
  namespace: string,
  podName: string,
  count: number,
  decideWithinMs: number,
): Promise<Burst> {
  const api = new KubeRestClient(await connectionFromKubeConfig(admin));
  const kubelet = await PodCertificateKubelet.register({ admin, node: cluster.controlPlane.kubeconfigFor(`system:node:${NODE_NAME}`), nodeName: NODE_NAME });
  const ours = new Set<string>();
  const outcomes = new Map<string, string>();
  let settle!: () => void;
  const allDecided = new Promise<void>((resolve) => (settle = resolve));
  const path = certificatesPath('podcertificaterequests', namespace);
  // One watch of the namespace counts the outcomes: a waiter per request would cost this process more than the signer.
  const requests = new Informer<PodCertificateRequest>(
    {
      description: `PodCertificateRequests in ${namespace}`,
      resource: 'podcertificaterequests',
      list: (page) => api.get<ListPage<PodCertificateRequest>>(path, page),
      watchPath: path,
    },
    { watch: api, counter: api.counter },
  );
  const seen = (r: PodCertificateRequest): void => {
    const condition = terminalCondition(r);
    if (condition?.type === undefined || !ours.has(r.metadata.name ?? '')) return;
    outcomes.set(r.metadata.name!, condition.type);
    if (outcomes.size === count) settle();
  };
  requests.onChange((e) => e.type !== 'DELETED' && seen(e.object));
  const stop = async (): Promise<void> => {
    await requests.stop();
    await kubelet.stop();
    api.close();
  };
  try {
    requests.start();
    await requests.synced;
    const pod = { pod: await api.get<V1Pod>(corePath('pods', namespace, podName)), serviceAccountUid: '' };
    const account = await api.get<V1ServiceAccount>(corePath('serviceaccounts', namespace, pod.pod.spec?.serviceAccountName ?? 'default'));
    const kubeletPod = { ...pod, serviceAccountUid: account.metadata!.uid! };
    let next = 0;
    await Promise.all(
      Array.from({ length: IN_FLIGHT }, async () => {
        while (next < count) {
          next++;
          const { request } = await kubelet.requestCertificate(kubeletPod);
          ours.add(request.metadata.name!);
          // Its decision may have come before its name was known here.
          const cached = requests.get(namespace, request.metadata.name!);
          if (cached) seen(cached);
        }
      }),
    );
  } catch (e) {
    await stop();
    throw e;
  }
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`${outcomes.size} of ${count} requests decided after ${decideWithinMs / 1000} s`)), decideWithinMs);
  });
  const decided = Promise.race([allDecided, late])
    .then(() => {
      const counts: Record<string, number> = {};
      for (const type of outcomes.values()) counts[type] = (counts[type] ?? 0) + 1;
      return counts;
    })
    .finally(() => clearTimeout(timer));
  return { made: count, decided, stop };
}

/** One answer of {@link probeFromNode}: the HTTP status (0: none) and the time to it, in ms. */
export interface ProbeAnswer {
  readonly status: number;
  readonly ms: number;
}

/**
 * GETs `url` from inside the node's namespaces, where pod addresses are, as the kubelet probes a
 * pod: one curl after another, `pauseSeconds` apart, each allowed `maxSeconds`. `stop()` ends the
 * loop and resolves with every answer.
 */
export function probeFromNode(cluster: RealCluster, url: string, pauseSeconds = 0.25, maxSeconds = 60): { stop(): Promise<ProbeAnswer[]> } {
  // `read -t` ends the pause early when the test closes stdin (status 1, or 0 for a line): the loop stops.
  const loop = `while :; do curl -s -o /dev/null -m ${maxSeconds} -w '%{http_code} %{time_total}\\n' '${url}' || true; read -t ${pauseSeconds} _; [ $? -gt 128 ] || break; done`;
  const [command, ...args] = cluster.enter(['bash', '-c', loop]);
  const child = spawn(command!, args, { stdio: ['pipe', 'pipe', 'inherit'] });
  const answers: ProbeAnswer[] = [];
  createInterface({ input: child.stdout }).on('line', (line) => {
    const [status, seconds] = line.trim().split(' ');
    answers.push({ status: Number(status), ms: Number(seconds) * 1000 });
  });
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  return {
    stop: async () => {
      child.stdin.end();
      await exited;
      return answers;
    },
  };
}
