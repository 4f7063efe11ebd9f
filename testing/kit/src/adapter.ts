// The adapter under test against a real kube-apiserver: admin helpers over its cluster, an adapter
// that records its hooks, and convergence.
import { PROVIDER_LABEL, PROVIDER_SECRET_NAME, type Policy, type RotationReason, type SecretWrite, describeTarget } from '@eso-mtls/core';
import { CoreV1Api, type KubeConfig, type V1Secret } from '@kubernetes/client-node';
import { type AdapterOptions, ProviderCertificateAdapter } from '@eso-mtls/kubernetes';
import type { ControlPlane } from '../../envtest/src/index.js';

/** Admin helpers over the test's control plane. */
export class TestCluster {
  readonly core: CoreV1Api;
  constructor(readonly plane: ControlPlane) {
    this.core = plane.adminKubeConfig.makeApiClient(CoreV1Api);
  }

  async namespace(name: string): Promise<string> {
    await this.core.createNamespace({ body: { metadata: { name } } }).catch((e: { code?: number }) => {
      if (e.code !== 409) throw e;
    });
    return name;
  }

  /** Creates a Service carrying the provider label (and any extra annotations). */
  async labelledService(namespace: string, name: string, annotations: Record<string, string> = {}): Promise<void> {
    await this.core.createNamespacedService({
      namespace,
      body: {
        metadata: { name, labels: { [PROVIDER_LABEL]: 'true' }, annotations },
        spec: { ports: [{ port: 8443, name: 'grpc' }] },
      },
    });
  }

  async patchService(namespace: string, name: string, change: (labels: Record<string, string>, annotations: Record<string, string>) => void): Promise<void> {
    const svc = await this.core.readNamespacedService({ namespace, name });
    const labels = { ...svc.metadata?.labels };
    const annotations = { ...svc.metadata?.annotations };
    change(labels, annotations);
    svc.metadata = { ...svc.metadata, labels, annotations };
    await this.core.replaceNamespacedService({ namespace, name, body: svc });
  }

  async deleteService(namespace: string, name: string): Promise<void> {
    await this.core.deleteNamespacedService({ namespace, name });
  }

  async secret(namespace: string, name = PROVIDER_SECRET_NAME): Promise<V1Secret | undefined> {
    try {
      return await this.core.readNamespacedSecret({ namespace, name });
    } catch (e) {
      if ((e as { code?: number }).code === 404) return undefined;
      throw e;
    }
  }

  /** Replaces a Secret's data (as a user or attacker would), keeping its metadata. */
  async overwriteSecretData(namespace: string, name: string, change: (data: Record<string, string>) => void): Promise<void> {
    const s = (await this.secret(namespace, name))!;
    const data: Record<string, string> = {};
    for (const [k, v] of Object.entries(s.data ?? {})) data[k] = Buffer.from(v, 'base64').toString('utf8');
    change(data);
    s.data = Object.fromEntries(Object.entries(data).map(([k, v]) => [k, Buffer.from(v).toString('base64')]));
    await this.core.replaceNamespacedSecret({ namespace, name, body: s });
  }

  async deleteSecret(namespace: string, name = PROVIDER_SECRET_NAME): Promise<void> {
    await this.core.deleteNamespacedSecret({ namespace, name });
  }

  async allSecrets(): Promise<V1Secret[]> {
    return (await this.core.listSecretForAllNamespaces()).items;
  }

  /**
   * Every Event's reason and message on a Service that the adapter recorded (component
   * `eso-mtls`). Kubernetes' own are left out: on a loaded machine the apiserver's ClusterIP repair
   * loop may record `ClusterIPNotAllocated` on a Service it has just created.
   */
  async events(namespace: string, service: string): Promise<{ reason: string; message: string; type: string; count: number }[]> {
    const list = await this.core.listNamespacedEvent({ namespace, fieldSelector: `involvedObject.name=${service},source=eso-mtls` });
    return list.items.map((e) => ({ reason: e.reason ?? '', message: e.message ?? '', type: e.type ?? '', count: e.count ?? 0 }));
  }
}

/** An issuance the adapter reported through its hooks. */
export interface RecordedWrite {
  readonly target: string;
  readonly kind: SecretWrite['kind'];
  readonly reason?: RotationReason;
  readonly phases?: readonly string[];
}

/** An adapter plus what its hooks saw. */
export interface RecordingAdapter {
  readonly adapter: ProviderCertificateAdapter;
  readonly writes: RecordedWrite[];
  readonly rotations: { namespace: string; services: readonly string[]; reason: RotationReason }[];
  readonly failures: { namespace: string; services: readonly string[] }[];
  /** For each server leaf written: its notAfter, and the notAfter the status view (the gauges) showed for the namespace at that moment. */
  readonly shownAtWrite: { namespace: string; written: number | undefined; shown: number | undefined; activeCa: number | undefined }[];
  /** Reasons of server/client leaf issuances for `target` (`namespace/<ns>` or `client`). */
  reasonsFor(target: string): RotationReason[];
}

/** Starts an adapter for `esoNamespace` recording its hooks; stop it with adapter.stop(). */
export async function startAdapter(
  kubeConfig: KubeConfig,
  esoNamespace: string,
  options: Partial<AdapterOptions> & { policy?: Partial<Policy> } = {},
): Promise<RecordingAdapter> {
  const writes: RecordedWrite[] = [];
  const rotations: RecordingAdapter['rotations'] = [];
  const failures: RecordingAdapter['failures'] = [];
  const shownAtWrite: RecordingAdapter['shownAtWrite'] = [];
  const adapter: ProviderCertificateAdapter = await ProviderCertificateAdapter.create({
    kubeConfig,
    debounceMs: 20,
    ...options,
    policy: { esoNamespace, ...options.policy },
    hooks: {
      onWrite: (w) => {
        writes.push({ target: describeTarget(w.target), kind: w.kind, reason: w.reason, phases: w.phases });
        if (w.kind === 'serverLeaf' && typeof w.target === 'object') {
          const namespace = w.target.namespace;
          const shown = [...adapter.status.providerCertificates()].find((e) => e.namespace === namespace)?.notAfter;
          const activeCa = [...adapter.status.caCertificates()].find((c) => c.state === 'active')?.notAfter;
          shownAtWrite.push({ namespace, written: w.notAfter, shown, activeCa });
        }
      },
      onRotation: (namespace, services, reason) => rotations.push({ namespace, services, reason }),
      onRotationFailure: (namespace, services) => failures.push({ namespace, services }),
    },
  });
  await adapter.start();
  return {
    adapter,
    writes,
    rotations,
    failures,
    shownAtWrite,
    reasonsFor: (target) => writes.filter((w) => w.target === target && w.kind !== 'bundle' && w.kind !== 'ca').map((w) => w.reason!),
  };
}

/**
 * Reconciles until a round writes nothing, failing after `rounds` tries. The watch may lag a
 * test's own change by a few ms, so one quiet round is confirmed by a second after a pause.
 */
export async function converge(adapter: ProviderCertificateAdapter, rounds = 20): Promise<void> {
  let quiet = 0;
  for (let i = 0; i < rounds; i++) {
    const r = await adapter.reconcileNow();
    if (r && r.written === 0 && r.stale === 0 && r.failed === 0 && r.fenced === 0) {
      if (++quiet >= 2) return;
    } else {
      quiet = 0;
    }
    await new Promise((resolve) => setTimeout(resolve, 150));
  }
  throw new Error(`adapter did not converge in ${rounds} rounds; last: ${JSON.stringify({ ...adapter.lastRound, plan: undefined })}`);
}
