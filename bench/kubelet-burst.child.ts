// The kubelet stand-in in a process of its own, so that the bench process holds the signer alone
// and its event-loop delay is the signer's. Registers the node, runs `pods` pods in `namespace`
// (selected by a labelled Service the bench made), prints {"ready":true}; then each stdin line
// "requests <n>" makes n PodCertificateRequests as the node, round-robin over the pods, 16 create
// calls in flight, and prints {"made":n,"seconds":s}; "stop" stops it.
//
//   node --import ./scripts/register-ts.mjs bench/kubelet-burst.child.ts <admin kubeconfig> <node kubeconfig> <node> <namespace> <pods>
import 'reflect-metadata';
import { createInterface } from 'node:readline';
import { KubeConfig } from '@kubernetes/client-node';
import { type KubeletPod, PodCertificateKubelet } from '../testing/kubelet/index.js';
import { pool } from './kubernetes.bench.js';

const [adminPath, nodePath, nodeName, namespace, podCount] = process.argv.slice(2);
if (!adminPath || !nodePath || !nodeName || !namespace || !Number(podCount)) {
  throw new Error('usage: kubelet-burst.child.ts <admin kubeconfig> <node kubeconfig> <node> <namespace> <pods>');
}
/** Create calls in flight, as the other pod-certificate benches make them. */
const CONCURRENCY = 16;
const load = (path: string): KubeConfig => {
  const kc = new KubeConfig();
  kc.loadFromFile(path);
  return kc;
};
const send = (message: unknown): boolean => process.stdout.write(`${JSON.stringify(message)}\n`);

const kubelet = await PodCertificateKubelet.register({ admin: load(adminPath), node: load(nodePath), nodeName });
const pods: KubeletPod[] = [];
await pool(
  Array.from({ length: Number(podCount) }, (_, i) => `provider-${i}`),
  CONCURRENCY,
  async (name) =>
    pods.push(
      await kubelet.runPod({
        namespace,
        name,
        serviceAccountName: 'provider',
        labels: { app: 'provider' },
        podCertificate: { signerName: 'eso-mtls.io/provider-server', keyType: 'ECDSAP256', maxExpirationSeconds: 86_400 },
      }),
    ),
);
send({ ready: true });
for await (const line of createInterface({ input: process.stdin })) {
  const [command, n] = line.split(' ');
  if (command === 'requests') {
    const started = performance.now();
    await pool(
      Array.from({ length: Number(n) }, (_, i) => pods[i % pods.length]!),
      CONCURRENCY,
      (pod) => kubelet.requestCertificate(pod),
    );
    send({ made: Number(n), seconds: (performance.now() - started) / 1000 });
  } else if (command === 'stop') {
    await kubelet.stop();
    process.stdout.write(`${JSON.stringify({ stopped: true })}\n`, () => process.exit(0));
  }
}
