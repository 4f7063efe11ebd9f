// The soak's cluster: the real etcd and kube-apiserver, two controller replicas from dist, provider
// processes and the ESO client under libfaketime, and the kubelet stand-in between them.
import { type ChildProcess, spawn } from 'node:child_process';
import { X509Certificate } from 'node:crypto';
import { mkdirSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { connect } from 'node:tls';
import { CoreV1Api, type KubeConfig, type V1Secret } from '@kubernetes/client-node';
import { type ControlPlane, startControlPlane } from '../envtest/src/index.js';
import { freePorts } from '@eso-mtls/test-kit/ports';
import { SharedTimeOffset, fakedTimeEnv } from '../faketime/faketime.js';
import { bindShippedRoles, CA_SECRET, CLIENT_SECRET, ESO_NS, leaseHolder, PROVIDER_SECRET } from '@eso-mtls/test-kit/cluster';
import { ControllerProcess } from '@eso-mtls/test-kit/controller-process';
import { applyAll, kustomizeInstall } from '@eso-mtls/test-kit/manifests';
import type { CallTarget } from '@eso-mtls/test-kit/demo';
import type { Delivery } from '@eso-mtls/test-kit/demo';
import { KubeletStandIn, type VolumeMount } from './kubelet.js';
import { ProviderProcess, type ProviderSpec, sum } from './provider-fleet.js';
import { SOAK_AUDIT_POLICY } from './history.js';
import type { SeededRandom } from './random.js';

const ROOT = new URL('../../', import.meta.url).pathname;
/** Leader election, compressed as the failover test does: a SIGSTOP past the lease takes seconds. */
export const LEASE_MS = 4000;
const ELECTION = [`--leader-election-lease-duration=${LEASE_MS}ms`, '--leader-election-renew-deadline=3s', '--leader-election-retry-period=500ms'];
export const REPLICAS = ['replica-a', 'replica-b'] as const;

/**
 * A replica's Lease holder identity: `soak-a1`, `soak-b2`. Both replicas share the stem `soak`, as
 * the pods of one Deployment share theirs, so neither judges the other's Lease foreign
 * (packages/controller/src/lease-holder.ts); the letter and the generation tell them apart.
 */
const soakIdentity = (name: string, generation: number): string => `soak-${name.slice('replica-'.length)}${generation}`;
export const REPLICA_USERS = new Set<string>(REPLICAS);
/** A Secret change reaches a folder within this (real ms); the policy assumes 5 minutes. */
export const DELIVERY_DELAY_MS = { min: 200, max: 2000 } as const;
/** libfaketime re-reads the offset file once per real second (FAKETIME_CACHE_DURATION=0): wait that, with margin. */
const FAKETIME_REFRESH_MS = 1500;

/** A labelled Service of the soak and the provider pods that serve it. */
export interface SoakService {
  readonly namespace: string;
  readonly service: string;
}

/** One failed call, as the ESO client reported it, stamped with the test's clock. */
export interface FailedCall {
  readonly at: number;
  readonly address: string;
  readonly message: string;
}

/** Counts a controller replica's metrics had when it was last read, summed over its lifetimes. */
interface ReplicaCounts {
  rotations: Map<string, number>;
  failures: number;
}

/**
 * Everything the soak runs and watches. Simulated time is real time plus the shared offset: the
 * controllers read it from the offset file, the providers and the client through libfaketime.
 */
export class SoakWorld {
  readonly dir = mkdtempSync(join(tmpdir(), 'eso-mtls-soak-'));
  /** The offset the providers and the client see (libfaketime), and the one the controllers see. */
  readonly offset = new SharedTimeOffset(join(this.dir, 'offset'));
  private readonly controllerOffset = new SharedTimeOffset(join(this.dir, 'controller-offset'));
  readonly failures: FailedCall[] = [];
  readonly deliveries: {
    readonly mount: VolumeMount;
    readonly delivery: Delivery;
    readonly providerRunning: boolean;
    readonly at: number;
    readonly seq: number;
  }[] = [];
  private seq = 0;
  readonly providers = new Map<string, ProviderProcess>();
  /** The running process of each replica user; a restarted replica campaigns under a new identity, as a new pod would. */
  readonly replicas = new Map<string, ControllerProcess>();
  private readonly generations = new Map<string, number>();
  /** Provider starts, with the files each loaded: where a provider's reload counters begin. */
  readonly providerStarts: { readonly directory: string; readonly payload: Record<string, string>; readonly at: number; readonly seq: number }[] = [];
  private readonly ended = new Map<string, ReplicaCounts>();
  plane!: ControlPlane;
  admin!: KubeConfig;
  core!: CoreV1Api;
  kubelet!: KubeletStandIn;
  private client: ChildProcess | undefined;
  private readonly replies = new Map<number, (reply: ClientReport) => void>();
  private replyId = 0;
  readonly clientDir = join(this.dir, 'eso-client');
  private readonly removals = new Map<string, () => void>();
  private readonly pauses = new Map<number, () => void>();

  constructor(
    readonly random: SeededRandom,
    readonly log: (line: string) => void,
  ) {}

  /** Simulated now. */
  now(): number {
    return Date.now() + this.offset.get();
  }

  /** Starts the control plane, applies deploy/, creates `services`, and starts both replicas. */
  async start(services: readonly SoakService[], planted: readonly V1Secret[]): Promise<void> {
    this.plane = await startControlPlane({ audit: { policyYaml: SOAK_AUDIT_POLICY }, identities: REPLICAS.map((name) => ({ name })) });
    this.admin = this.plane.adminKubeConfig;
    this.core = this.admin.makeApiClient(CoreV1Api);
    await applyAll(this.admin, kustomizeInstall('deploy'));
    for (const r of REPLICAS) await bindShippedRoles(this.admin, r);
    for (const ns of new Set(services.map((s) => s.namespace))) await this.core.createNamespace({ body: { metadata: { name: ns } } });
    for (const s of services) await this.labelService(s, true);
    for (const secret of planted) await this.core.createNamespacedSecret({ namespace: secret.metadata!.namespace!, body: secret });
    for (const r of REPLICAS) this.startReplica(r);
    this.kubelet = new KubeletStandIn({
      api: this.core,
      deliveryDelay: () => this.random.between(DELIVERY_DELAY_MS.min, DELIVERY_DELAY_MS.max),
      onDelivery: (mount, delivery) =>
        this.deliveries.push({
          mount,
          delivery,
          providerRunning: this.providerAt(mount.directory)?.running ?? mount.directory === this.clientDir,
          at: this.now(),
          seq: this.seq++,
        }),
      onError: (e) => this.log(`kubelet: ${e.message}`),
    });
  }

  /** Creates the Service labelled, or sets or removes its label. */
  async labelService(s: SoakService, labelled: boolean): Promise<void> {
    const labels: Record<string, string> = labelled ? { 'external-secrets.io/provider': 'true' } : {};
    try {
      const current = await this.core.readNamespacedService({ namespace: s.namespace, name: s.service });
      current.metadata!.labels = labels;
      await this.core.replaceNamespacedService({ namespace: s.namespace, name: s.service, body: current });
    } catch (e) {
      if ((e as { code?: number }).code !== 404) throw e;
      await this.core.createNamespacedService({
        namespace: s.namespace,
        body: { metadata: { name: s.service, labels }, spec: { ports: [{ name: 'grpc', port: 8443 }] } },
      });
    }
  }

  /** Starts a controller replica (again, after a kill) under its identity. */
  startReplica(name: string): ControllerProcess {
    const generation = (this.generations.get(name) ?? 0) + 1;
    this.generations.set(name, generation);
    const p = new ControllerProcess(
      name,
      [
        '--kubeconfig',
        this.plane.identity(name).kubeconfigPath,
        '--leader-elect',
        ...ELECTION,
        `--leader-election-identity=${soakIdentity(name, generation)}`,
        '--health-probe-bind-address=127.0.0.1:0',
        '--metrics-bind-address=127.0.0.1:0',
      ],
      { ESO_MTLS_SOAK_OFFSET_FILE: this.controllerOffset.file },
      ROOT,
      [join(ROOT, 'testing/soak/controller-entry.ts')],
    );
    this.replicas.set(name, p);
    return p;
  }

  /** The replica holding the Lease, if any. */
  async leader(): Promise<ControllerProcess | undefined> {
    const holder = await leaseHolder(this.admin);
    return holder === undefined ? undefined : this.replicas.get(holder.replace(/^soak-([a-z])\d+$/, 'replica-$1'));
  }

  /** Reads a replica's counters into its lifetime totals, then SIGKILLs it. */
  async killReplica(p: ControllerProcess): Promise<void> {
    const counts = await this.replicaCounts(p);
    const total = this.ended.get(p.name) ?? { rotations: new Map(), failures: 0 };
    for (const [k, n] of counts.rotations) total.rotations.set(k, (total.rotations.get(k) ?? 0) + n);
    total.failures += counts.failures;
    this.ended.set(p.name, total);
    await p.kill();
  }

  /** Rotations by "namespace/service/reason" and failures, over every replica's every lifetime. */
  async controllerCounts(): Promise<ReplicaCounts> {
    const total: ReplicaCounts = { rotations: new Map(), failures: 0 };
    const add = (c: ReplicaCounts): void => {
      for (const [k, n] of c.rotations) total.rotations.set(k, (total.rotations.get(k) ?? 0) + n);
      total.failures += c.failures;
    };
    for (const c of this.ended.values()) add(c);
    for (const p of this.replicas.values()) if (p.alive) add(await this.replicaCounts(p));
    return total;
  }

  private async replicaCounts(p: ControllerProcess): Promise<ReplicaCounts> {
    const { metrics } = await p.endpoints();
    const scrape = await (await fetch(metrics)).text();
    const rotations = new Map<string, number>();
    for (const line of scrape.split('\n')) {
      const m = /^eso_provider_certificate_rotation_total\{(.*)\} (\S+)$/.exec(line);
      if (!m) continue;
      const label = (n: string): string => new RegExp(`${n}="([^"]*)"`).exec(m[1]!)?.[1] ?? '';
      const n = Number(m[2]);
      if (n > 0) rotations.set(`${label('namespace')}/${label('service')}/${label('reason')}`, n);
    }
    return {
      rotations,
      failures: sum(scrape, 'eso_provider_certificate_rotation_failures_total') + sum(scrape, 'eso_ca_certificate_rotation_failures_total'),
    };
  }

  /** Mounts the Service's Secret in a new folder and starts a provider process on it. */
  async startProvider(s: SoakService): Promise<ProviderProcess> {
    const key = `${s.namespace}/${s.service}`;
    const workDir = join(this.dir, 'providers', s.namespace, s.service);
    const certDir = join(workDir, 'certs');
    mkdirSync(certDir, { recursive: true });
    const [port, healthPort] = (await freePorts(2)) as [number, number];
    await this.kubelet.mount({ namespace: s.namespace, secret: PROVIDER_SECRET, directory: certDir });
    const spec: ProviderSpec = { ...s, certDir, workDir, port, healthPort };
    const p = new ProviderProcess(
      spec,
      fakedTimeEnv(this.offset),
      (sp, code, signal) => this.log(`provider ${sp.namespace}/${sp.service} exited (${code ?? signal})`),
      (sp, line) => this.log(`  provider ${sp.namespace}/${sp.service}: ${line.slice(0, 400)}`),
    );
    this.providers.set(key, p);
    await this.runProvider(p);
    return p;
  }

  /** Starts (or restarts) a provider process, noting the files it loads. */
  async runProvider(p: ProviderProcess): Promise<void> {
    const payload = Object.fromEntries(['ca.crt', 'tls.crt', 'tls.key'].map((f) => [f, readFileSync(join(p.spec.certDir, f), 'utf8')]));
    this.providerStarts.push({ directory: p.spec.certDir, payload, at: this.now(), seq: this.seq++ });
    await p.start();
  }

  /** Stops a provider for good and unmounts its folder. */
  async removeProvider(s: SoakService): Promise<void> {
    const key = `${s.namespace}/${s.service}`;
    const p = this.providers.get(key);
    if (p === undefined) return;
    await p.stop();
    await this.kubelet.unmount(p.spec.certDir);
    this.providers.delete(key);
  }

  private providerAt(directory: string): ProviderProcess | undefined {
    return [...this.providers.values()].find((p) => p.spec.certDir === directory);
  }

  private target(p: ProviderProcess): CallTarget {
    return { namespace: p.spec.namespace, service: p.spec.service, address: p.address, connectTo: `127.0.0.1:${p.spec.port}` };
  }

  /** Mounts ESO's client Secret and starts the ESO client process (2 connections per provider). */
  async startClient(): Promise<void> {
    mkdirSync(this.clientDir, { recursive: true });
    await this.kubelet.mount({ namespace: ESO_NS, secret: CLIENT_SECRET, directory: this.clientDir });
    const payload = Object.fromEntries(['ca.crt', 'tls.crt', 'tls.key'].map((f) => [f, readFileSync(join(this.clientDir, f), 'utf8')]));
    this.providerStarts.push({ directory: this.clientDir, payload, at: this.now(), seq: this.seq++ });
    const child = spawn(
      process.execPath,
      ['--import', join(ROOT, 'scripts/register-ts.mjs'), join(ROOT, 'testing/soak/eso-client.child.ts'), this.clientDir, '2'],
      {
        cwd: ROOT,
        env: fakedTimeEnv(this.offset),
        stdio: ['pipe', 'pipe', 'pipe'],
      },
    );
    this.client = child;
    let stderr = '';
    child.stderr!.on('data', (d: Buffer) => {
      stderr = (stderr + d.toString()).slice(-4000);
    });
    await new Promise<void>((resolve, reject) => {
      createInterface({ input: child.stdout! }).on('line', (line) => {
        const m = JSON.parse(line) as {
          started?: boolean;
          failure?: { address: string; message: string };
          report?: number;
          removed?: string;
          paused?: number;
        } & ClientReport;
        if (m.started) resolve();
        if (m.failure) {
          this.failures.push({ at: Date.now(), ...m.failure });
          if (this.failures.length <= 20) this.log(`  failed call to ${m.failure.address}: ${m.failure.message}`);
        }
        if (m.report !== undefined) this.replies.get(m.report)?.(m);
        if (m.removed !== undefined) this.removals.get(m.removed)?.();
        if (m.paused !== undefined) this.pauses.get(m.paused)?.();
      });
      child.once('exit', (code, signal) => reject(new Error(`the ESO client exited (${code ?? signal}): ${stderr}`)));
    });
  }

  private tellClient(request: object): void {
    this.client!.stdin!.write(`${JSON.stringify(request)}\n`);
  }

  /** ESO calls a provider from now on (its SecretStore was created). */
  addTarget(p: ProviderProcess): void {
    this.tellClient({ add: this.target(p) });
  }

  /** ESO stops calling a provider (its SecretStore was deleted); resolves once the calls in flight ended. */
  removeTarget(p: ProviderProcess): Promise<void> {
    return new Promise((resolve) => {
      this.removals.set(p.address, () => {
        this.removals.delete(p.address);
        resolve();
      });
      this.tellClient({ remove: p.address });
    });
  }

  /**
   * Moves simulated time by `ms` with no call in flight: grpc-js deadlines are wall-clock instants,
   * so a call that spans a jump of days would fail as an artifact of the test, not of rotation.
   * The controllers see the jump only once every faked clock shows it (libfaketime re-reads its
   * file once a second): a certificate issued at the new time must not reach a provider whose clock
   * is still days behind it, which no real cluster's clocks would do.
   */
  async jump(ms: number): Promise<void> {
    const id = ++this.replyId;
    await new Promise<void>((resolve) => {
      this.pauses.set(id, resolve);
      this.tellClient({ pause: id });
    });
    this.pauses.delete(id);
    const next = this.offset.get() + ms;
    this.offset.set(next);
    await new Promise((r) => setTimeout(r, FAKETIME_REFRESH_MS));
    this.controllerOffset.set(next);
    this.tellClient({ resume: true });
  }

  /** The ESO client's counts and the client certificate it uses. */
  clientReport(): Promise<ClientReport> {
    const id = ++this.replyId;
    return new Promise((resolve) => {
      this.replies.set(id, (r) => {
        this.replies.delete(id);
        resolve(r);
      });
      this.tellClient({ report: id });
    });
  }

  /** Reads every Secret the soak looks at. */
  async secrets(): Promise<V1Secret[]> {
    return (await this.core.listSecretForAllNamespaces()).items;
  }

  /** The leaf a provider serves, by a real mTLS handshake with ESO's current client certificate. */
  servedLeaf(p: ProviderProcess, client: { cert: string; key: string }): Promise<string | undefined> {
    return new Promise((resolve) => {
      const socket = connect({
        host: '127.0.0.1',
        port: p.spec.port,
        servername: `${p.spec.service}.${p.spec.namespace}.svc`,
        ...client,
        rejectUnauthorized: false,
        ALPNProtocols: ['h2'],
      });
      const done = (value: string | undefined): void => {
        socket.destroy();
        resolve(value);
      };
      socket.setTimeout(5000, () => done(undefined));
      socket.once('secureConnect', () => done(socket.getPeerX509Certificate()?.fingerprint256));
      socket.once('error', () => done(undefined));
    });
  }

  /** Stops every process and the control plane, and removes the folders. */
  async stop(): Promise<void> {
    await this.kubelet?.stop();
    if (this.client && this.client.exitCode === null) {
      const exited = new Promise((r) => this.client!.once('exit', r));
      this.client.kill('SIGTERM');
      const timer = setTimeout(() => this.client?.kill('SIGKILL'), 10_000);
      await exited;
      clearTimeout(timer);
    }
    for (const p of this.providers.values()) await p.stop().catch(() => undefined);
    await Promise.all([...this.replicas.values()].map((p) => p.kill()));
    await this.plane?.stop();
    rmSync(this.dir, { recursive: true, force: true });
  }
}

/** What the ESO client answers to a report request. */
export interface ClientReport {
  readonly made: number;
  readonly failed: number;
  readonly reloads: number;
  readonly refused: number;
  /** Serial of the client certificate in use, and a hash of its trust bundle. */
  readonly serial: string;
  readonly bundle: string;
}

/** The serial of a PEM certificate, as the grpc package writes it (lower-case hex). */
export function serialOf(pem: string): string {
  return new X509Certificate(pem).serialNumber.toLowerCase();
}

export { CA_SECRET, CLIENT_SECRET, ESO_NS, PROVIDER_SECRET };
