import { parseArgs } from 'node:util';
import { CERTIFICATE_LAYOUTS, type CertificateLayout, MIN_TLS_VERSIONS, type MinTlsVersion } from '@eso-mtls/grpc';

/** Everything the file provider's main reads from flags and the environment. */
export interface FileProviderConfig {
  readonly dataFile: string;
  readonly certDir: string;
  /** What certDir holds: a mounted Secret (`secret`) or a pod-certificate projection (`pod-certificate`). */
  readonly certLayout: CertificateLayout;
  /** The lowest TLS version the gRPC port accepts: TLS 1.3 (default), or TLS 1.2 for an ESO that speaks only TLS 1.2. */
  readonly minTlsVersion: MinTlsVersion;
  readonly host: string;
  readonly port: number;
  readonly healthPort: number;
  /** Metric labels; absent when neither --namespace/POD_NAMESPACE nor --service/PROVIDER_SERVICE_NAME is set. */
  readonly metrics: { readonly namespace: string; readonly service: string } | undefined;
}

/** Bad flags or environment; the message names the value and what to do. */
export class FileProviderConfigError extends Error {
  override readonly name = 'FileProviderConfigError';
}

/** Usage text for --help and for configuration errors. */
export const USAGE = `file-provider: serves secrets from a JSON or YAML file to External Secrets Operator over mTLS

  --data-file PATH     data file (DATA_FILE), required; .json is JSON, anything else YAML
  --cert-dir DIR       ca.crt, tls.crt, tls.key (CERT_DIR), default /etc/provider/certs
  --cert-layout L      what --cert-dir holds (CERT_LAYOUT): secret (default; ca.crt, tls.crt,
                       tls.key) or pod-certificate (credentials.pem and ca.crt, projected by the kubelet)
  --min-tls-version V  lowest TLS version of the gRPC port (MIN_TLS_VERSION): TLSv1.3 (default) or
                       TLSv1.2, for an ESO built to speak only TLS 1.2 (ECDHE with AES-GCM or ChaCha20 only)
  --port N             gRPC mTLS port (PORT), default 8080
  --health-port N      /healthz /readyz /metrics port (HEALTH_PORT), default 8081
  --host ADDR          listen address (HOST), default 0.0.0.0
  --namespace NS       metric label (POD_NAMESPACE)
  --service NAME       metric label, the labelled Service's name (PROVIDER_SERVICE_NAME)
`;

function port(name: string, raw: string): number {
  const n = Number(raw);
  if (!/^\d+$/.test(raw) || n > 65535) throw new FileProviderConfigError(`${name}=${JSON.stringify(raw)} is not a TCP port (0-65535)`);
  return n;
}

function certLayout(raw: string): CertificateLayout {
  const layout = CERTIFICATE_LAYOUTS.find((l) => l === raw);
  if (layout === undefined) throw new FileProviderConfigError(`cert-layout=${JSON.stringify(raw)} is not one of ${CERTIFICATE_LAYOUTS.join(', ')}`);
  return layout;
}

function minTlsVersion(raw: string): MinTlsVersion {
  const version = MIN_TLS_VERSIONS.find((v) => v === raw);
  if (version === undefined) throw new FileProviderConfigError(`min-tls-version=${JSON.stringify(raw)} is not one of ${MIN_TLS_VERSIONS.join(', ')}`);
  return version;
}

/** Flags win over the environment, which wins over defaults. */
export function parseFileProviderConfig(argv: readonly string[], env: Readonly<Record<string, string | undefined>>): FileProviderConfig {
  let values: Record<string, string | undefined>;
  try {
    ({ values } = parseArgs({
      args: [...argv],
      options: Object.fromEntries(
        ['data-file', 'cert-dir', 'cert-layout', 'min-tls-version', 'port', 'health-port', 'host', 'namespace', 'service'].map((o) => [
          o,
          { type: 'string' as const },
        ]),
      ),
      strict: true,
    }) as { values: Record<string, string | undefined> });
  } catch (e) {
    throw new FileProviderConfigError(`${(e as Error).message}\n\n${USAGE}`);
  }
  const pick = (flag: string, variable: string): string | undefined => values[flag] ?? (env[variable] || undefined);
  const dataFile = pick('data-file', 'DATA_FILE');
  if (dataFile === undefined) throw new FileProviderConfigError(`no data file: pass --data-file or set DATA_FILE\n\n${USAGE}`);
  const namespace = pick('namespace', 'POD_NAMESPACE');
  const service = pick('service', 'PROVIDER_SERVICE_NAME');
  if ((namespace === undefined) !== (service === undefined)) {
    throw new FileProviderConfigError(
      `metrics need both --namespace (POD_NAMESPACE) and --service (PROVIDER_SERVICE_NAME); got only ${namespace ? 'the namespace' : 'the service'}`,
    );
  }
  return {
    dataFile,
    certDir: pick('cert-dir', 'CERT_DIR') ?? '/etc/provider/certs',
    certLayout: certLayout(pick('cert-layout', 'CERT_LAYOUT') ?? 'secret'),
    minTlsVersion: minTlsVersion(pick('min-tls-version', 'MIN_TLS_VERSION') ?? 'TLSv1.3'),
    host: pick('host', 'HOST') ?? '0.0.0.0',
    port: port('port', pick('port', 'PORT') ?? '8080'),
    healthPort: port('health-port', pick('health-port', 'HEALTH_PORT') ?? '8081'),
    metrics: namespace !== undefined && service !== undefined ? { namespace, service } : undefined,
  };
}
