import type { V1Pod } from '@kubernetes/client-node';
import type { Manifest } from '@eso-mtls/test-kit/manifests';

/** The key every caller reads, and the data file that holds it. */
const REMOTE_KEY = 'db/password';
const DATA_FILE = `secrets:\n  ${REMOTE_KEY}:\n    value: real-node\n`;

/**
 * The shipped example (deploy/examples/file-provider, built by kustomize) once per namespace, with
 * the locally built image (never pulled) and a data file from a ConfigMap in place of the empty
 * folder it ships with, so GetSecret has something to return. Each namespace carries the label
 * an admin gives namespaces allowed to have providers (the chart's providerLabelPolicy).
 */
export function providerManifests(example: readonly Manifest[], namespaces: readonly string[], image: string): Manifest[] {
  return namespaces.flatMap((ns) => [
    ...example.map((m) => inNamespace(structuredClone(m), ns, image)),
    { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'file-provider-data', namespace: ns }, data: { 'secrets.yaml': DATA_FILE } } as Manifest,
  ]);
}

/**
 * The label a cluster admin gives a namespace allowed to have providers (the chart's
 * providerLabelPolicy.namespaceLabel and namespaceLabelValue, which controllerCheck requires).
 */
export const ALLOWED_NAMESPACE_LABELS: Readonly<Record<string, string>> = { 'eso-mtls.io/providers-allowed': 'true' };

function inNamespace(m: Manifest, ns: string, image: string): Manifest {
  const meta = m.metadata as { name: string; namespace?: string; labels?: Record<string, string> };
  if (m.kind === 'Namespace') Object.assign(meta, { name: ns, labels: { ...meta.labels, ...ALLOWED_NAMESPACE_LABELS } });
  else meta.namespace = ns;
  if (m.kind === 'Deployment') {
    const spec = (
      m as unknown as {
        spec: {
          template: { spec: { containers: { image: string; imagePullPolicy?: string }[]; volumes: { name: string; emptyDir?: object; configMap?: object }[] } };
        };
      }
    ).spec.template.spec;
    for (const c of spec.containers) Object.assign(c, { image, imagePullPolicy: 'Never' });
    const data = spec.volumes.find((v) => v.name === 'data');
    if (data === undefined) throw new Error('the example Deployment has no volume "data" any more: update testing/real-node');
    delete data.emptyDir;
    data.configMap = { name: 'file-provider-data' };
  }
  return m;
}

/** How ESO's client gets its certificate: the client Secret, or a pod certificate the kubelet makes. */
export type ClientMode = 'secret' | 'pod-certificate';

/** ESO core's ServiceAccount (the chart's eso.serviceAccount): the client signer issues only to its pods. */
export const ESO_SERVICE_ACCOUNT = 'external-secrets';

/**
 * ESO core's side: one pod in ESO's namespace with one Go reloading client per provider, each
 * calling `file-provider.<ns>.svc:8443` (Service DNS, then the ClusterIP) 20 times a second and
 * printing its running totals every 2 s. In Secret mode it mounts the client Secret; in
 * pod-certificate mode it runs as ESO's ServiceAccount with the volume of
 * deploy/examples/eso-core-pod-certificates: a podCertificate from the client signer and the
 * server signer's ClusterTrustBundle.
 */
export function clientPod(name: string, image: string, providers: readonly string[], mode: ClientMode): V1Pod {
  const volume =
    mode === 'secret'
      ? { name: 'client-tls', secret: { secretName: 'eso-provider-client-tls' } }
      : {
          name: 'client-tls',
          projected: {
            sources: [
              {
                podCertificate: {
                  signerName: 'eso-mtls.io/eso-client',
                  keyType: 'ECDSAP256',
                  maxExpirationSeconds: 86400,
                  credentialBundlePath: 'credentials.pem',
                },
              },
              {
                clusterTrustBundle: {
                  signerName: 'eso-mtls.io/provider-server',
                  labelSelector: { matchLabels: { 'eso-mtls.io/trust-bundle': 'true' } },
                  path: 'ca.crt',
                },
              },
            ],
          },
        };
  return {
    metadata: { name },
    spec: {
      ...(mode === 'pod-certificate' ? { serviceAccountName: ESO_SERVICE_ACCOUNT } : {}),
      automountServiceAccountToken: false,
      securityContext: { runAsNonRoot: true, runAsUser: 65532, runAsGroup: 65532 },
      containers: providers.map((ns) => ({
        name: ns,
        image,
        imagePullPolicy: 'Never',
        args: [
          `-addr=file-provider.${ns}.svc:8443`,
          '-cert-dir=/etc/eso/client-certs',
          `-cert-layout=${mode}`,
          `-key=${REMOTE_KEY}`,
          '-report-every=2s',
          '-interval=50ms',
          '-poll=5s',
        ],
        volumeMounts: [{ name: 'client-tls', mountPath: '/etc/eso/client-certs', readOnly: true }],
      })),
      volumes: [volume],
    },
  };
}

/** A caller's running totals, from its newest progress line. */
export interface CallerProgress {
  /** `<client pod>/<provider namespace>`. */
  readonly provider: string;
  readonly calls: number;
  readonly failed: number;
  readonly failures: readonly string[];
}

/** The newest `{"event":"progress",...}` line of a caller's log (zeros before its first). */
export function lastProgress(log: string): Omit<CallerProgress, 'provider'> {
  const lines = log.split('\n').filter((l) => l.startsWith('{"event":"progress"'));
  const last = lines.at(-1);
  if (last === undefined) return { calls: 0, failed: 0, failures: [] };
  const p = JSON.parse(last) as { calls: number; failed: number; failures: string[] };
  return { calls: p.calls, failed: p.failed, failures: p.failures };
}

/** One failed call of a caller, from its log. */
export interface FailedCall {
  /** `<client pod>/<provider namespace>`. */
  readonly provider: string;
  readonly at: number;
  readonly error: string;
}

/** Every call_failed line of a caller's log (`{"at":..,"error":..,"event":"call_failed"}`). */
export function failedCalls(provider: string, log: string): FailedCall[] {
  return eventLines<{ at: string; error: string }>(log, 'call_failed').map((f) => ({ provider, at: Date.parse(f.at), error: f.error }));
}

/** The first call of a caller on a provider certificate it had not seen before. */
export interface ServerCertificateSeen {
  /** `<client pod>/<provider namespace>`. */
  readonly provider: string;
  /** Hex as Go prints it, without leading zeros: compare with {@link sameSerial}. */
  readonly serial: string;
  /** When that call returned (the handshake was at or before it), in ms. */
  readonly at: number;
}

/** Every `{"event":"server_certificate",...}` line of a caller's log: one per provider leaf, at its first call. */
export function serverCertificates(provider: string, log: string): ServerCertificateSeen[] {
  return eventLines<{ at: string; serial: string }>(log, 'server_certificate').map((c) => ({ provider, serial: c.serial, at: Date.parse(c.at) }));
}

/** Whether two hex serials are one number (Go prints no leading zeros; Node pads to whole bytes). */
export function sameSerial(a: string, b: string): boolean {
  return BigInt(`0x${a}`) === BigInt(`0x${b}`);
}

/**
 * The JSON lines of a caller's log whose `event` is `event`, parsed. Each line is parsed, not
 * matched by its start: the client prints call_failed from a Go map, whose keys encoding/json
 * sorts (`{"at":..,"error":..,"event":"call_failed"}`), so a match on `{"event":` never saw a
 * failed call. A line still being written when the log is read is not yet a line: skipped.
 */
function eventLines<T>(log: string, event: string): T[] {
  const lines: T[] = [];
  for (const l of log.split('\n')) {
    if (!l.startsWith('{')) continue;
    let parsed: { event?: unknown };
    try {
      parsed = JSON.parse(l) as { event?: unknown };
    } catch {
      continue;
    }
    if (parsed.event === event) lines.push(parsed as T);
  }
  return lines;
}
