import { parseArgs } from 'node:util';

/** Everything the file provider's main reads from flags and the environment. */
export interface FileProviderConfig {
  readonly dataFile: string;
  readonly certDir: string;
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

/** Flags win over the environment, which wins over defaults. */
export function parseFileProviderConfig(argv: readonly string[], env: Readonly<Record<string, string | undefined>>): FileProviderConfig {
  let values: Record<string, string | undefined>;
  try {
    ({ values } = parseArgs({
      args: [...argv],
      options: Object.fromEntries(
        ['data-file', 'cert-dir', 'port', 'health-port', 'host', 'namespace', 'service'].map((o) => [o, { type: 'string' as const }]),
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
    host: pick('host', 'HOST') ?? '0.0.0.0',
    port: port('port', pick('port', 'PORT') ?? '8080'),
    healthPort: port('health-port', pick('health-port', 'HEALTH_PORT') ?? '8081'),
    metrics: namespace !== undefined && service !== undefined ? { namespace, service } : undefined,
  };
}
