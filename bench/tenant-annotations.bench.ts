/**
 * A tenant's oversized `eso-mtls.io/rotate` annotations against the adapter, on a real
 * kube-apiserver: N labelled Services in one namespace, each with a 250,000-character value, plus a
 * quiet namespace. Reports the adapter process's peak RSS, failed writes, and whether both
 * namespaces hold a certificate after a fixed time. 0.1 copied every value into one Secret
 * annotation and into log lines (413 on every write, 417 MB at 80 Services).
 *
 *   node --import ./scripts/register-ts.mjs bench/tenant-annotations.bench.ts [services]
 */
import 'reflect-metadata';
import { PROVIDER_LABEL, PROVIDER_SECRET_NAME, ROTATE_ANNOTATION } from '@eso-mtls/core';
import { CoreV1Api } from '@kubernetes/client-node';
import { startControlPlane } from '../testing/envtest/src/index.js';
import { AdapterProcess, ESO } from './kubernetes.bench.js';

/** What {@link runTenantAnnotationsBenchmark} measures. */
export interface TenantAnnotationsBenchmark {
  readonly services: number;
  readonly valueCharacters: number;
  /** Peak resident set size of the adapter process (getrusage), and its RSS at the end. */
  readonly peakRssMb: number;
  readonly rssMb: number;
  readonly secondsRun: number;
  /** Secret writes the adapter sent, and those the apiserver refused. */
  readonly requests: Record<string, number>;
  readonly noisyIssued: boolean;
  readonly quietIssued: boolean;
}

const mb = (bytes: unknown): number => Math.round((bytes as number) / 1024 / 1024);

export async function runTenantAnnotationsBenchmark(services = 80, valueCharacters = 250_000, runSeconds = 20): Promise<TenantAnnotationsBenchmark> {
  const plane = await startControlPlane();
  try {
    const core = plane.adminKubeConfig.makeApiClient(CoreV1Api);
    for (const name of [ESO, 'noisy', 'quiet']) await core.createNamespace({ body: { metadata: { name } } });
    const label = { [PROVIDER_LABEL]: 'true' };
    for (let i = 0; i < services; i++) {
      await core.createNamespacedService({
        namespace: 'noisy',
        body: {
          metadata: { name: `svc-${i}`, labels: label, annotations: { [ROTATE_ANNOTATION]: `${i}-${'x'.repeat(valueCharacters)}` } },
          spec: { ports: [{ port: 8443 }] },
        },
      });
    }
    await core.createNamespacedService({ namespace: 'quiet', body: { metadata: { name: 'provider', labels: label }, spec: { ports: [{ port: 8443 }] } } });
    const { process: adapter } = await AdapterProcess.start(plane.adminKubeconfigPath);
    const started = Date.now();
    await adapter.ask('start');
    await new Promise((r) => setTimeout(r, runSeconds * 1000));
    const report = await adapter.ask('report');
    await adapter.ask('stop');
    adapter.close();
    const issued = async (namespace: string): Promise<boolean> =>
      core.readNamespacedSecret({ namespace, name: PROVIDER_SECRET_NAME }).then(
        (s) => (s.data?.['tls.crt'] ?? '') !== '',
        () => false,
      );
    return {
      services,
      valueCharacters,
      peakRssMb: mb(report.maxRssBytes),
      rssMb: mb(report.rssBytes),
      secondsRun: Math.round((Date.now() - started) / 1000),
      requests: report.requests as Record<string, number>,
      noisyIssued: await issued('noisy'),
      quietIssued: await issued('quiet'),
    };
  } finally {
    await plane.stop();
  }
}

/** The figures as a table. */
export function formatTenantAnnotationsBenchmark(b: TenantAnnotationsBenchmark): string {
  return [
    `| ${b.services} Services with ${b.valueCharacters.toLocaleString('en')}-character rotate annotations, ${b.secondsRun} s | |`,
    '|---|---:|',
    `| adapter peak RSS | ${b.peakRssMb} MB |`,
    `| adapter RSS at the end | ${b.rssMb} MB |`,
    `| noisy / quiet namespace issued | ${b.noisyIssued ? 'yes' : 'no'} / ${b.quietIssued ? 'yes' : 'no'} |`,
    `| requests | ${Object.entries(b.requests)
      .map(([k, v]) => `${k} ${v}`)
      .join(', ')} |`,
  ].join('\n');
}
