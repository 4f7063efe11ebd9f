import { generateKeyPairSync } from 'node:crypto';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { request } from 'node:https';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { KubeConfig } from '@kubernetes/client-node';
import { locateTestBinaries, type TestBinaries } from './binaries.js';
import { type Identity, type IdentitySpec, provisionIdentities, writeKubeconfig, writeTokenFile } from './identities.js';
import { freePorts } from './ports.js';
import { LOG_TAIL_BYTES, type ProcessGroup, STOP_GRACE_MS, startProcessGroup } from './process-group.js';

/** What a suite asks of its control plane. */
export interface ControlPlaneOptions {
  /** Users besides the admin, each with a static token and a kubeconfig. */
  readonly identities?: readonly IdentitySpec[];
  /**
   * Authorise as a cluster with kubelets does: `--authorization-mode=Node,RBAC` and the
   * NodeRestriction admission plugin, so a {@link nodeIdentity} acts under the Node authorizer's
   * and NodeRestriction's rules (default false: RBAC only, no NodeRestriction).
   */
  readonly nodeAuthorization?: boolean;
  /** Extra kube-apiserver flags, e.g. `--min-request-timeout=4`. */
  readonly apiServerFlags?: readonly string[];
  /** Write an audit log (JSON lines); `true` logs every request at Metadata level. */
  readonly audit?: boolean | { readonly policyYaml: string };
  /** Seconds to wait for /readyz before failing (default 90: a busy 2-core machine is slow). */
  readonly startTimeoutSeconds?: number;
}

/** A running etcd + kube-apiserver on 127.0.0.1. */
export interface ControlPlane {
  /** https://127.0.0.1:<port> */
  readonly url: string;
  /** Temp dir holding data, certificates, logs and kubeconfigs; removed by stop(). */
  readonly dir: string;
  readonly adminKubeConfig: KubeConfig;
  readonly adminKubeconfigPath: string;
  /** The apiserver's serving CA (PEM), as the kubeconfigs trust it. */
  readonly caPem: string;
  /** Path of the JSON-lines audit log when `audit` was requested. */
  readonly auditLogPath: string | undefined;
  /** A fresh KubeConfig for a declared identity (or `admin`). */
  kubeconfigFor(identity: string): KubeConfig;
  /** The identity's token and kubeconfig path. */
  identity(name: string): Identity;
  /** Audit events recorded so far (requires `audit`). */
  auditEvents(): AuditEvent[];
  /** Stops kube-apiserver (SIGTERM, then SIGKILL; `{ crash: true }`: SIGKILL at once); etcd keeps running. */
  stopApiServer(options?: { readonly crash?: boolean }): Promise<void>;
  /** Starts kube-apiserver again on the same port against the same etcd and waits for /readyz. */
  startApiServer(): Promise<void>;
  /** stopApiServer() then startApiServer(). */
  restartApiServer(options?: { readonly crash?: boolean }): Promise<void>;
  /**
   * Stops etcd (SIGTERM, then SIGKILL; `{ crash: true }`: SIGKILL at once) and starts it again on
   * the same ports and data; kube-apiserver keeps running. Resolves once the apiserver is ready again.
   */
  restartEtcd(options?: { readonly crash?: boolean }): Promise<void>;
  /** Process-group ids of etcd and kube-apiserver (for leak checks). */
  processGroupIds(): number[];
  /** Stops everything and removes the temp dir. Safe to call twice. */
  stop(): Promise<void>;
}

/** The fields of an audit.k8s.io/v1 Event that tests read. */
export interface AuditEvent {
  /** Unique per request; a long-running request (watch) has two events with the same id. */
  readonly auditID: string;
  readonly stage: string;
  readonly verb: string;
  readonly requestURI: string;
  readonly user: { readonly username: string; readonly groups?: string[] };
  readonly objectRef?: { readonly resource?: string; readonly namespace?: string; readonly name?: string };
  readonly responseStatus?: { readonly code?: number };
  /** The object written, where the audit policy's level is RequestResponse. */
  readonly responseObject?: unknown;
  readonly requestReceivedTimestamp: string;
  readonly stageTimestamp: string;
}

const DEFAULT_AUDIT_POLICY = `apiVersion: audit.k8s.io/v1
kind: Policy
omitStages: ["RequestReceived"]
rules:
- level: Metadata
`;

const stopOnExit = new Set<ControlPlane>();

/**
 * Starts etcd and kube-apiserver on free loopback ports in a temp dir, with RBAC authorisation
 * (Node and RBAC, plus NodeRestriction, with `nodeAuthorization`),
 * static-token identities (an admin in system:masters plus `options.identities`), service-account
 * signing keys (for TokenRequest), and a kubeconfig per identity. Resolves once /readyz is 200.
 * Retries with fresh ports if another process grabbed one first.
 */
export async function startControlPlane(options: ControlPlaneOptions = {}): Promise<ControlPlane> {
  const binaries = await locateTestBinaries();
  let lastError: unknown;
  for (let attempt = 0; attempt < 3; attempt++) {
    try {
      return await startOnce(binaries, options);
    } catch (e) {
      lastError = e;
      if (!(e instanceof PortInUseError)) throw e;
    }
  }
  throw lastError;
}

class PortInUseError extends Error {}

/** Starts of a restarted etcd tried before a port still in use fails the restart. */
const ETCD_RESTART_ATTEMPTS = 5;

async function startOnce(binaries: TestBinaries, options: ControlPlaneOptions): Promise<ControlPlane> {
  const dir = mkdtempSync(join(tmpdir(), 'eso-mtls-envtest-'));
  const [etcdClientPort, etcdPeerPort, apiPort] = (await freePorts(3)) as [number, number, number];
  const url = `https://127.0.0.1:${apiPort}`;
  const timeoutMs = (options.startTimeoutSeconds ?? 90) * 1000;

  const identities = provisionIdentities(options.identities ?? []);
  writeTokenFile(join(dir, 'tokens.csv'), identities);
  const { privateKey } = generateKeyPairSync('rsa', { modulusLength: 2048 });
  writeFileSync(join(dir, 'sa.key'), privateKey.export({ type: 'pkcs8', format: 'pem' }), { mode: 0o600 });

  let auditLogPath: string | undefined;
  const auditFlags: string[] = [];
  if (options.audit) {
    auditLogPath = join(dir, 'audit.log');
    const policy = typeof options.audit === 'object' ? options.audit.policyYaml : DEFAULT_AUDIT_POLICY;
    writeFileSync(join(dir, 'audit-policy.yaml'), policy);
    auditFlags.push(
      `--audit-policy-file=${join(dir, 'audit-policy.yaml')}`,
      `--audit-log-path=${auditLogPath}`,
      '--audit-log-format=json',
      '--audit-log-mode=blocking',
      '--audit-log-maxbackup=0',
    );
  }

  const etcdUrl = `http://127.0.0.1:${etcdClientPort}`;
  const startEtcd = (): ProcessGroup =>
    startProcessGroup(
      'etcd',
      binaries.etcd,
      [
        `--data-dir=${join(dir, 'etcd')}`,
        '--unsafe-no-fsync',
        `--listen-client-urls=${etcdUrl}`,
        `--advertise-client-urls=${etcdUrl}`,
        `--listen-peer-urls=http://127.0.0.1:${etcdPeerPort}`,
        `--initial-advertise-peer-urls=http://127.0.0.1:${etcdPeerPort}`,
        `--initial-cluster=default=http://127.0.0.1:${etcdPeerPort}`,
        '--log-level=warn',
      ],
      join(dir, 'etcd.log'),
    );
  let etcd = startEtcd();

  const apiArgs = [
    `--etcd-servers=${etcdUrl}`,
    `--cert-dir=${join(dir, 'certs')}`,
    `--secure-port=${apiPort}`,
    '--bind-address=127.0.0.1',
    '--advertise-address=127.0.0.1',
    ...authorizationFlags(options.nodeAuthorization ?? false),
    '--service-cluster-ip-range=10.96.0.0/16',
    '--endpoint-reconciler-type=none',
    `--token-auth-file=${join(dir, 'tokens.csv')}`,
    '--service-account-issuer=https://kubernetes.default.svc',
    `--service-account-key-file=${join(dir, 'sa.key')}`,
    `--service-account-signing-key-file=${join(dir, 'sa.key')}`,
    ...auditFlags,
    ...(options.apiServerFlags ?? []),
  ];
  const adminToken = identities.get('admin')!.token;
  let apiServer: ProcessGroup | undefined;
  const startApi = async (): Promise<void> => {
    apiServer = startProcessGroup('kube-apiserver', binaries.kubeApiServer, apiArgs, join(dir, 'kube-apiserver.log'));
    await waitReady(url, adminToken, apiServer, etcd, timeoutMs);
  };

  const stopAll = async (): Promise<void> => {
    await apiServer?.stop(STOP_GRACE_MS);
    await etcd.stop(STOP_GRACE_MS);
  };

  try {
    await startApi();
  } catch (e) {
    await stopAll();
    rmSync(dir, { recursive: true, force: true });
    throw e;
  }

  // The apiserver generated its serving certificate (and the CA that signed it) in --cert-dir.
  const caPem = readFileSync(join(dir, 'certs', 'apiserver.crt'), 'utf8');
  const resolved = new Map<string, Identity>();
  for (const [name, { spec, token }] of identities) {
    resolved.set(name, { ...spec, token, kubeconfigPath: writeKubeconfig(dir, name, token, url, caPem) });
  }
  const identity = (name: string): Identity => {
    const found = resolved.get(name);
    if (!found)
      throw new Error(
        `identity ${JSON.stringify(name)} was not declared; declared: ${[...resolved.keys()].join(', ')}. Add it to startControlPlane({ identities })`,
      );
    return found;
  };
  const kubeconfigFor = (name: string): KubeConfig => {
    const kc = new KubeConfig();
    kc.loadFromFile(identity(name).kubeconfigPath);
    return kc;
  };

  let stopped = false;
  const plane: ControlPlane = {
    url,
    dir,
    caPem,
    auditLogPath,
    adminKubeConfig: kubeconfigFor('admin'),
    adminKubeconfigPath: identity('admin').kubeconfigPath,
    kubeconfigFor,
    identity,
    auditEvents: () => {
      if (!auditLogPath) throw new Error('auditEvents() needs startControlPlane({ audit: true })');
      if (!existsSync(auditLogPath)) return [];
      return readFileSync(auditLogPath, 'utf8')
        .split('\n')
        .filter((l) => l.trim())
        .map((l) => JSON.parse(l) as AuditEvent);
    },
    stopApiServer: async (opts) => {
      await apiServer?.stop(opts?.crash ? 0 : STOP_GRACE_MS);
    },
    startApiServer: async () => {
      if (apiServer?.running) throw new Error('kube-apiserver is already running; call stopApiServer() first');
      await startApi();
    },
    restartApiServer: async (opts) => {
      await apiServer?.stop(opts?.crash ? 0 : STOP_GRACE_MS);
      await startApi();
    },
    restartEtcd: async (opts) => {
      await etcd.stop(opts?.crash ? 0 : STOP_GRACE_MS);
      // Its ports are ours again only once it has gone: another process looking for a free port
      // (freePorts binds one and closes it) may hold one of them for a moment, so a start that
      // finds a port in use is tried again, on the same ports, which the apiserver knows.
      for (let attempt = 1; ; attempt++) {
        etcd = startEtcd();
        // The apiserver keeps running and reconnects; ready again once etcd answers it.
        if (!apiServer) return;
        try {
          await waitReady(url, adminToken, apiServer, etcd, timeoutMs);
          return;
        } catch (e) {
          if (!(e instanceof PortInUseError) || attempt >= ETCD_RESTART_ATTEMPTS) throw e;
          await new Promise((r) => setTimeout(r, 500));
        }
      }
    },
    processGroupIds: () => [etcd.pgid, ...(apiServer ? [apiServer.pgid] : [])],
    stop: async () => {
      if (stopped) return;
      stopped = true;
      stopOnExit.delete(plane);
      await stopAll();
      rmSync(dir, { recursive: true, force: true });
    },
  };
  stopOnExit.add(plane);
  return plane;
}

/** RBAC alone, or the Node authorizer before RBAC plus NodeRestriction (which v1.37 does not enable by default). */
function authorizationFlags(nodeAuthorization: boolean): string[] {
  return nodeAuthorization ? ['--authorization-mode=Node,RBAC', '--enable-admission-plugins=NodeRestriction'] : ['--authorization-mode=RBAC'];
}

async function waitReady(url: string, token: string, apiServer: ProcessGroup, etcd: ProcessGroup, timeoutMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  let last = '';
  while (Date.now() < deadline) {
    for (const p of [etcd, apiServer]) {
      if (!p.running) {
        const log = p.logTail(LOG_TAIL_BYTES);
        const message = `${p.name} exited during start-up; last log lines:\n${log}`;
        throw /address already in use/.test(log) ? new PortInUseError(message) : new Error(message);
      }
    }
    last = await probe(`${url}/readyz`, token);
    if (last === '200') return;
    await new Promise((r) => setTimeout(r, 250));
  }
  throw new Error(`kube-apiserver at ${url} not ready after ${timeoutMs / 1000}s (last /readyz: ${last}); log tail:\n${apiServer.logTail(LOG_TAIL_BYTES)}`);
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

/** Stops every control plane this process started and has not stopped (for afterAll hooks). */
export async function stopAllControlPlanes(): Promise<void> {
  await Promise.all([...stopOnExit].map((p) => p.stop()));
}
