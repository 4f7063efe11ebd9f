import { CoreV1Api, type KubeConfig, KubernetesObjectApi, type KubernetesObject } from '@kubernetes/client-node';

/** Thrown by a condition to end the wait at once (a process it depends on died); other errors are retried. */
export class StopWaiting extends Error {}

/** Polls `condition` every 250 ms until it is true; rejects naming `what` (and the last error) after `timeoutMs`. */
export async function waitFor(condition: () => boolean | Promise<boolean>, timeoutMs: number, what: string): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  let lastError: unknown;
  for (;;) {
    try {
      if (await condition()) return;
    } catch (e) {
      if (e instanceof StopWaiting) throw e;
      lastError = e;
    }
    if (Date.now() > deadline)
      throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}${lastError instanceof Error ? ` (last: ${lastError.message})` : ''}`);
    await new Promise((r) => setTimeout(r, 250));
  }
}

/** Creates each object, leaving one that already exists as it is. */
export async function applyObjects(kubeConfig: KubeConfig, objects: readonly Record<string, unknown>[]): Promise<void> {
  const api = KubernetesObjectApi.makeApiClient(kubeConfig);
  for (const o of objects) {
    try {
      await api.create(o as KubernetesObject);
    } catch (e) {
      if ((e as { code?: number }).code !== 409) throw e;
    }
  }
}

/** True when the node reports Ready. */
export async function nodeReady(kubeConfig: KubeConfig, name: string): Promise<boolean> {
  try {
    const node = await kubeConfig.makeApiClient(CoreV1Api).readNode({ name });
    return node.status?.conditions?.some((c) => c.type === 'Ready' && c.status === 'True') ?? false;
  } catch (e) {
    if ((e as { code?: number }).code === 404) return false;
    throw e;
  }
}

/** True when kube-controller-manager has made the namespace usable by pods: its default ServiceAccount and `kube-root-ca.crt`. */
export async function namespaceReady(kubeConfig: KubeConfig, namespace: string): Promise<boolean> {
  const core = kubeConfig.makeApiClient(CoreV1Api);
  const accounts = await core.listNamespacedServiceAccount({ namespace });
  const maps = await core.listNamespacedConfigMap({ namespace });
  return accounts.items.some((a) => a.metadata?.name === 'default') && maps.items.some((m) => m.metadata?.name === 'kube-root-ca.crt');
}
