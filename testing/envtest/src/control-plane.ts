import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { KubeConfig } from '@kubernetes/client-node';
import { ADMIN, type IdentitySpec, type LaunchedControlPlane, launchControlPlane, signalGroup, writeKubeconfig } from '@eso-mtls/devtools/cluster';
import { locateTestBinaries } from './binaries.js';

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

/** An identity with its token and the kubeconfig file written for it. */
export interface Identity extends IdentitySpec {
  readonly token: string;
  readonly kubeconfigPath: string;
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

/** How long a server gets after SIGTERM before SIGKILL, in tests. */
const STOP_GRACE_MS = 5000;

/** Control planes this process started and has not stopped, with their launcher's handle. */
const live = new Map<ControlPlane, LaunchedControlPlane>();
let hooked = false;

/**
 * Starts the devtools package's control plane (@eso-mtls/devtools/cluster, as `eso-mtls
 * dev-cluster` does) on free loopback ports in a temp dir, with the binaries build-testbin.sh
 * provides, an admin and `options.identities` with static tokens, and a kubeconfig file per
 * identity. Resolves once /readyz is 200.
 */
export async function startControlPlane(options: ControlPlaneOptions = {}): Promise<ControlPlane> {
  const binaries = await locateTestBinaries();
  const dir = mkdtempSync(join(tmpdir(), 'eso-mtls-envtest-'));
  let launched: LaunchedControlPlane;
  let auditLogPath: string | undefined;
  try {
    auditLogPath = options.audit ? auditLogIn(dir) : undefined;
    launched = await launchControlPlane({
      binaries,
      dir,
      identities: options.identities ?? [],
      nodeAuthorization: options.nodeAuthorization ?? false,
      apiServerFlags: [...auditFlags(dir, options.audit ?? false), ...(options.apiServerFlags ?? [])],
      startTimeoutMs: (options.startTimeoutSeconds ?? 90) * 1000,
      stopGraceMs: STOP_GRACE_MS,
    });
  } catch (e) {
    rmSync(dir, { recursive: true, force: true });
    throw e;
  }
  const identities = new Map<string, Identity>();
  for (const { name } of [ADMIN, ...(options.identities ?? [])]) {
    const kubeconfigPath = join(dir, `kubeconfig-${name.replace(/[^A-Za-z0-9._-]/g, '_')}.json`);
    writeKubeconfig(kubeconfigPath, launched.kubeconfigFor(name));
    identities.set(name, { ...launched.identity(name), kubeconfigPath });
  }
  const identity = (name: string): Identity => {
    const found = identities.get(name);
    if (found) return found;
    throw new Error(
      `identity ${JSON.stringify(name)} was not declared; declared: ${[...identities.keys()].join(', ')}. Add it to startControlPlane({ identities })`,
    );
  };
  let stopped = false;
  const plane: ControlPlane = {
    url: launched.url,
    dir,
    caPem: launched.caPem,
    auditLogPath,
    adminKubeConfig: launched.kubeconfigFor('admin'),
    adminKubeconfigPath: identity('admin').kubeconfigPath,
    kubeconfigFor: (name) => launched.kubeconfigFor(identity(name).name),
    identity,
    auditEvents: () => readAuditLog(auditLogPath),
    stopApiServer: (opts) => launched.stopApiServer(opts),
    startApiServer: () => launched.startApiServer(),
    restartApiServer: async (opts) => {
      await launched.stopApiServer(opts);
      await launched.startApiServer();
    },
    restartEtcd: (opts) => launched.restartEtcd(opts),
    processGroupIds: () => launched.processes().map((p) => p.pgid),
    stop: async () => {
      if (stopped) return;
      stopped = true;
      live.delete(plane);
      await launched.stop();
      rmSync(dir, { recursive: true, force: true });
    },
  };
  live.set(plane, launched);
  installExitHook();
  return plane;
}

/** Where {@link auditFlags} has the apiserver write its audit log. */
export const auditLogIn = (dir: string): string => join(dir, 'audit.log');

/**
 * The kube-apiserver flags of an audit log in `dir` (audit.log, JSON lines; the policy written
 * beside it): `true` logs every request at Metadata level. Read it with {@link readAuditLog}.
 */
export function auditFlags(dir: string, audit: NonNullable<ControlPlaneOptions['audit']>): string[] {
  if (audit === false) return [];
  const policyPath = join(dir, 'audit-policy.yaml');
  writeFileSync(policyPath, typeof audit === 'object' ? audit.policyYaml : DEFAULT_AUDIT_POLICY);
  return [
    `--audit-policy-file=${policyPath}`,
    `--audit-log-path=${auditLogIn(dir)}`,
    '--audit-log-format=json',
    '--audit-log-mode=blocking',
    '--audit-log-maxbackup=0',
  ];
}

/** The events of the audit log at `path` so far (none before the apiserver wrote one). */
export function readAuditLog(path: string | undefined): AuditEvent[] {
  if (!path) throw new Error('auditEvents() needs startControlPlane({ audit: true })');
  if (!existsSync(path)) return [];
  return readFileSync(path, 'utf8')
    .split('\n')
    .filter((l) => l.trim())
    .map((l) => JSON.parse(l) as AuditEvent);
}

// Last resort when a suite forgets stop(): the 'exit' event allows only synchronous work, and the
// servers' watchdogs would take a second to notice.
function installExitHook(): void {
  if (hooked) return;
  hooked = true;
  process.once('exit', () => {
    for (const group of liveProcessGroups()) signalGroup(group, 'SIGKILL');
  });
}

/** Process-group ids of every server started by this process and not yet exited. */
export function liveProcessGroups(): number[] {
  return [...live.values()].flatMap((plane) =>
    plane
      .processes()
      .filter((p) => p.running)
      .map((p) => p.pgid),
  );
}

/** Stops every control plane this process started and has not stopped (for afterAll hooks). */
export async function stopAllControlPlanes(): Promise<void> {
  await Promise.all([...live.keys()].map((p) => p.stop()));
}
