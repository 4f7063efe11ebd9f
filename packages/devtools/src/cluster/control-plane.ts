import { generateKeyPairSync } from 'node:crypto';
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { request } from 'node:https';
import { join } from 'node:path';
import type { KubeConfig } from '@kubernetes/client-node';
import type { ControlPlaneBinaries } from './binaries.js';
import { type ApiServerEndpoint, type IdentitySpec, type StaticIdentity, provisionIdentities, tokenKubeConfig, writeTokenFile } from './identities.js';
import { freePorts } from './ports.js';
import { ServerProcess, type SpawnWrap } from './process-group.js';

/** What to start, and where. Every default gives etcd and kube-apiserver on the host's 127.0.0.1. */
export interface ControlPlaneLaunch {
  readonly binaries: ControlPlaneBinaries;
  /**
   * The folder for etcd's data, the apiserver's certificates, the token file, the
   * service-account key and the logs; the caller makes it and removes it. A folder an earlier
   * launch left keeps its etcd data, tokens and service-account key, so old tokens stay valid.
   */
  readonly dir: string;
  /** Users besides the admin, each with a static token (kube-controller-manager, a kubelet, ...). */
  readonly identities?: readonly IdentitySpec[];
  /** `--authorization-mode=Node,RBAC` and NodeRestriction, as a cluster with kubelets runs (default RBAC alone). */
  readonly nodeAuthorization?: boolean;
  /** Extra kube-apiserver flags, after the launcher's own. */
  readonly apiServerFlags?: readonly string[];
  /** How long start-up may take before it fails (default 120 s: a busy 2-core machine is slow). */
  readonly startTimeoutMs?: number;
  /** How long a server gets after SIGTERM before SIGKILL (default 10 s). */
  readonly stopGraceMs?: number;
  /** Every process is started as `wrap([command, ...args])`, e.g. through nsenter into the harness's namespaces. */
  readonly wrap?: SpawnWrap;
  /** kube-apiserver's --bind-address (default 127.0.0.1); etcd always listens on 127.0.0.1 of the same network namespace. */
  readonly bindAddress?: string;
  /** kube-apiserver's --advertise-address (default 127.0.0.1): what the `kubernetes` Service's endpoints name. */
  readonly advertiseAddress?: string;
  /** kube-apiserver's --secure-port (default: one free on the host's 127.0.0.1). */
  readonly securePort?: number;
  /** Default 10.96.0.0/16; its first address is the `kubernetes` Service's ClusterIP. */
  readonly serviceClusterIpRange?: string;
  /**
   * The URL clients on the host use, when not https://<advertiseAddress>:<securePort>: a
   * forwarder to an apiserver in another network namespace. Start-up probes /readyz there.
   */
  readonly clientUrl?: string;
  /**
   * What clients of `clientUrl` verify the serving certificate against. The apiserver makes that
   * certificate for its bind and advertise addresses, the Service's ClusterIP and
   * kubernetes.default.svc; a forwarder's 127.0.0.1 is not among them, so pass `kubernetes.default.svc`.
   */
  readonly clientTlsServerName?: string;
}

/** A running etcd and kube-apiserver. */
export interface LaunchedControlPlane {
  /** What clients on the host use: `clientUrl`, else {@link advertisedUrl}. */
  readonly url: string;
  /** https://<advertiseAddress>:<securePort>: what processes beside the apiserver use (kubelet, kube-controller-manager). */
  readonly advertisedUrl: string;
  /** `clientTlsServerName`: what clients of {@link url} verify the serving certificate against. */
  readonly tlsServerName: string | undefined;
  readonly dir: string;
  /** The apiserver's serving certificate and the CA that signed it (PEM), as kubeconfigs trust it. */
  readonly caPem: string;
  /** The file holding {@link caPem} (kube-controller-manager's --root-ca-file). */
  readonly caFile: string;
  /** The key that signs ServiceAccount tokens (kube-controller-manager's --service-account-private-key-file). */
  readonly serviceAccountKeyFile: string;
  /** The admin's token (group system:masters). */
  readonly adminToken: string;
  /** A declared identity (or `admin`) with its token. */
  identity(name: string): StaticIdentity;
  /** A kubeconfig for a declared identity; `advertised` points it at {@link advertisedUrl} instead of {@link url}. */
  kubeconfigFor(name: string, options?: { readonly namespace?: string; readonly advertised?: boolean }): KubeConfig;
  /** The servers last started, running or not: etcd, then kube-apiserver. */
  processes(): readonly ServerProcess[];
  /** Stops kube-apiserver (SIGTERM, then SIGKILL; `crash`: SIGKILL at once); etcd keeps running. */
  stopApiServer(options?: { readonly crash?: boolean }): Promise<void>;
  /** Starts kube-apiserver again on the same port against the same etcd and waits for /readyz. */
  startApiServer(): Promise<void>;
  /** Stops etcd and starts it again on the same ports and data; resolves once the apiserver is ready again. */
  restartEtcd(options?: { readonly crash?: boolean }): Promise<void>;
  /** Stops kube-apiserver, then etcd. Leaves the folder. */
  stop(): Promise<void>;
}

const LOG_TAIL_BYTES = 4000;
/** Starts of a restarted etcd tried before a port still in use fails the restart. */
const ETCD_RESTART_ATTEMPTS = 5;

class PortInUseError extends Error {}

/**
 * Starts etcd and kube-apiserver with their files in `launch.dir`: RBAC (or Node and RBAC),
 * static-token identities (an admin in system:masters first), ServiceAccount token signing.
 * Resolves once /readyz answers 200; retries with fresh ports if another process took one first.
 */
export async function launchControlPlane(launch: ControlPlaneLaunch): Promise<LaunchedControlPlane> {
  let lastError: unknown;
  for (let attempt = 0; attempt < 3; attempt++) {
    try {
      return await launchOnce(launch);
    } catch (e) {
      lastError = e;
      if (!(e instanceof PortInUseError)) throw e;
    }
  }
  throw lastError;
}

async function launchOnce(launch: ControlPlaneLaunch): Promise<LaunchedControlPlane> {
  const { binaries, dir, wrap } = launch;
  const [etcdClientPort, etcdPeerPort, freeApiPort] = (await freePorts(3)) as [number, number, number];
  const advertiseAddress = launch.advertiseAddress ?? '127.0.0.1';
  const apiPort = launch.securePort ?? freeApiPort;
  const advertisedUrl = `https://${hostOf(advertiseAddress)}:${apiPort}`;
  const url = launch.clientUrl ?? advertisedUrl;
  const timeoutMs = launch.startTimeoutMs ?? 120_000;
  const graceMs = launch.stopGraceMs ?? 10_000;

  const tokenFile = join(dir, 'tokens.csv');
  const identities = provisionIdentities(launch.identities ?? [], tokenFile);
  writeTokenFile(tokenFile, identities);
  const serviceAccountKeyFile = serviceAccountKey(dir);

  const etcdUrl = `http://127.0.0.1:${etcdClientPort}`;
  const peerUrl = `http://127.0.0.1:${etcdPeerPort}`;
  const etcdArgs = [
    `--data-dir=${join(dir, 'etcd')}`,
    '--unsafe-no-fsync',
    `--listen-client-urls=${etcdUrl}`,
    `--advertise-client-urls=${etcdUrl}`,
    `--listen-peer-urls=${peerUrl}`,
    `--initial-advertise-peer-urls=${peerUrl}`,
    `--initial-cluster=default=${peerUrl}`,
    '--log-level=warn',
  ];
  const apiArgs = [
    `--etcd-servers=${etcdUrl}`,
    `--cert-dir=${join(dir, 'certs')}`,
    `--secure-port=${apiPort}`,
    `--bind-address=${launch.bindAddress ?? '127.0.0.1'}`,
    `--advertise-address=${advertiseAddress}`, // without it the server looks for a default route
    ...authorizationFlags(launch.nodeAuthorization ?? false),
    `--service-cluster-ip-range=${launch.serviceClusterIpRange ?? '10.96.0.0/16'}`,
    ...endpointReconcilerFlags(advertiseAddress),
    `--token-auth-file=${tokenFile}`,
    '--service-account-issuer=https://kubernetes.default.svc',
    `--service-account-key-file=${serviceAccountKeyFile}`,
    `--service-account-signing-key-file=${serviceAccountKeyFile}`,
    ...(launch.apiServerFlags ?? []),
  ];
  const adminToken = identities.get('admin')!.token;
  const startEtcd = (): ServerProcess => ServerProcess.start('etcd', binaries.etcd, etcdArgs, join(dir, 'etcd.log'), wrap);
  let etcd = startEtcd();
  let apiServer: ServerProcess | undefined;
  const startApi = async (): Promise<void> => {
    apiServer = ServerProcess.start('kube-apiserver', binaries.kubeApiServer, apiArgs, join(dir, 'kube-apiserver.log'), wrap);
    await waitReady(url, adminToken, apiServer, etcd, timeoutMs);
  };
  const stop = async (): Promise<void> => {
    await apiServer?.stop(graceMs);
    await etcd.stop(graceMs);
  };
  try {
    await startApi();
  } catch (e) {
    await stop();
    throw e;
  }

  // The apiserver made its serving certificate, and the CA that signed it, in --cert-dir.
  const caFile = join(dir, 'certs', 'apiserver.crt');
  const caPem = readFileSync(caFile, 'utf8');
  const client: ApiServerEndpoint = { url, caPem, tlsServerName: launch.clientTlsServerName };
  const identity = (name: string): StaticIdentity => {
    const found = identities.get(name);
    if (found) return found;
    throw new Error(
      `identity ${JSON.stringify(name)} was not declared; declared: ${[...identities.keys()].join(', ')}. Add it to the control plane's identities`,
    );
  };
  return {
    url,
    advertisedUrl,
    tlsServerName: launch.clientTlsServerName,
    dir,
    caPem,
    caFile,
    serviceAccountKeyFile,
    adminToken,
    identity,
    kubeconfigFor: (name, options = {}) =>
      tokenKubeConfig(options.advertised ? { url: advertisedUrl, caPem } : client, name, identity(name).token, options.namespace),
    processes: () => [etcd, ...(apiServer ? [apiServer] : [])],
    stopApiServer: async (options) => {
      await apiServer?.stop(options?.crash ? 0 : graceMs);
    },
    startApiServer: async () => {
      if (apiServer?.running) throw new Error('kube-apiserver is already running; call stopApiServer() first');
      await startApi();
    },
    restartEtcd: async (options) => {
      await etcd.stop(options?.crash ? 0 : graceMs);
      // Another process looking for a free port (freePorts binds one and closes it) may hold one
      // of etcd's for a moment, so a start that finds a port in use is tried again, on the same
      // ports, which the apiserver knows.
      for (let attempt = 1; ; attempt++) {
        etcd = startEtcd();
        if (!apiServer?.running) return;
        try {
          await waitReady(url, adminToken, apiServer, etcd, timeoutMs);
          return;
        } catch (e) {
          if (!(e instanceof PortInUseError) || attempt >= ETCD_RESTART_ATTEMPTS) throw e;
          await new Promise((r) => setTimeout(r, 500));
        }
      }
    },
    stop,
  };
}

// The key that signs ServiceAccount tokens: kept with the folder, so tokens outlive a restart.
function serviceAccountKey(dir: string): string {
  const file = join(dir, 'sa.key');
  if (!existsSync(file)) {
    const { privateKey } = generateKeyPairSync('rsa', { modulusLength: 2048 });
    writeFileSync(file, privateKey.export({ type: 'pkcs8', format: 'pem' }), { mode: 0o600 });
  }
  return file;
}

/** RBAC alone, or the Node authorizer before RBAC plus NodeRestriction (which v1.37 does not enable by default). */
export function authorizationFlags(nodeAuthorization: boolean): string[] {
  return nodeAuthorization ? ['--authorization-mode=Node,RBAC', '--enable-admission-plugins=NodeRestriction'] : ['--authorization-mode=RBAC'];
}

/**
 * A loopback address may not stand in the `kubernetes` Endpoints (the apiserver logs an error
 * every 10 s), so there the endpoints are not reconciled; any other address is, so pods reach the
 * apiserver through the Service's ClusterIP.
 */
export function endpointReconcilerFlags(advertiseAddress: string): string[] {
  return /^127\.|^::1$/.test(advertiseAddress) ? ['--endpoint-reconciler-type=none'] : [];
}

// An IPv6 address needs brackets in a URL.
function hostOf(address: string): string {
  return address.includes(':') ? `[${address}]` : address;
}

async function waitReady(url: string, token: string, apiServer: ServerProcess, etcd: ServerProcess, timeoutMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  let last = '';
  while (Date.now() < deadline) {
    for (const p of [etcd, apiServer]) {
      if (!p.running) {
        const log = p.logTail(LOG_TAIL_BYTES);
        const message = `${p.name} exited during start-up; the end of ${p.logPath}:\n${log}`;
        throw /address already in use/.test(log) ? new PortInUseError(message) : new Error(message);
      }
    }
    last = await probe(`${url}/readyz`, token);
    if (last === '200') return;
    await new Promise((r) => setTimeout(r, 250));
  }
  throw new Error(
    `kube-apiserver at ${url} was not ready after ${timeoutMs / 1000}s (last /readyz: ${last}); the end of ${apiServer.logPath}:\n${apiServer.logTail(LOG_TAIL_BYTES)}`,
  );
}

function probe(url: string, token: string): Promise<string> {
  return new Promise((resolveProbe) => {
    // The serving certificate does not exist until the server has started, so it cannot be pinned yet.
    const req = request(url, { rejectUnauthorized: false, headers: { Authorization: `Bearer ${token}` }, timeout: 2000 }, (res) => {
      res.resume();
      res.on('end', () => resolveProbe(String(res.statusCode)));
    });
    req.on('timeout', () => req.destroy(new Error('timeout')));
    req.on('error', (e) => resolveProbe(e.message));
    req.end();
  });
}
