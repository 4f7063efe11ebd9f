// The faults a soak injects, each a small function over the world. A fault that makes calls fail
// on purpose returns the window in which they may; every other failed call is a defect.
import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { EMERGENCY_ROTATION, ROTATE_ANNOTATION } from '@eso-mtls/core';
import { p256Request } from '@eso-mtls/test-kit/openssl';
import { CA_SECRET, ESO_NS, LEASE_MS, PROVIDER_SECRET, type SoakService, type SoakWorld } from './world.js';

/** Every kind of fault, in the order a short soak first meets them. */
export const FAULT_KINDS = [
  'kill-leader',
  'stop-leader',
  'restart-apiserver',
  'restart-etcd',
  'delete-provider-secret',
  'garbage-provider-secret',
  'foreign-ca-in-provider-secret',
  'delete-ca-secret',
  'unlabel-and-relabel',
  'second-service',
  'restart-provider',
  'corrupt-mounted-files',
  'emergency-ca-rotation',
  'forced-ca-rotation',
] as const;
/** One kind of fault. */
export type FaultKind = (typeof FAULT_KINDS)[number];

/** Faults that give the cluster a new CA, and so restart the CA's age: a long soak injects them early only. */
export const CA_RESETTING: ReadonlySet<FaultKind> = new Set(['delete-ca-secret', 'emergency-ca-rotation']);

/** Calls to `address` ('*': any) may fail from `start` to `end` (test clock, ms) because of `cause`. */
export interface FailureWindow {
  readonly cause: FaultKind;
  readonly address: string;
  readonly start: number;
  end: number;
}

/** What a fault needs besides the world: a wait until everything is valid, delivered and reloaded. */
export interface FaultContext {
  readonly world: SoakWorld;
  /** The Services currently labelled, by namespace; faults that label or unlabel change it. */
  readonly labelled: Map<string, string[]>;
  settle(what: string): Promise<number>;
}

/** What an injected fault did. */
export interface FaultOutcome {
  readonly detail: string;
  readonly window?: FailureWindow;
}

const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

async function patchSecret(
  world: SoakWorld,
  namespace: string,
  name: string,
  change: (data: Record<string, string>, annotations: Record<string, string>) => void,
): Promise<void> {
  const secret = await world.core.readNamespacedSecret({ namespace, name });
  const data = { ...(secret.data ?? {}) };
  const annotations = { ...(secret.metadata?.annotations ?? {}) };
  change(data, annotations);
  secret.data = data;
  secret.metadata = { ...secret.metadata, annotations };
  await world.core.replaceNamespacedSecret({ namespace, name, body: secret });
}

function foreignCaPem(world: SoakWorld): string {
  const key = join(world.dir, 'foreign.key');
  const cert = join(world.dir, 'foreign.crt');
  execFileSync('openssl', p256Request('self-signed', key, cert, '/CN=not the ESO CA', '-days', '3650'), { stdio: 'ignore' });
  return readFileSync(cert, 'utf8');
}

const providerNamespaces = (c: FaultContext): string[] => [...c.labelled.keys()].sort();
const pickProvider = (c: FaultContext) => c.world.random.pick([...c.world.providers.values()].sort((a, b) => a.address.localeCompare(b.address)));

/** Injects one fault of `kind`; resolves once it is over (the caller then waits for the cluster to settle). */
export async function injectFault(kind: FaultKind, c: FaultContext): Promise<FaultOutcome> {
  const w = c.world;
  switch (kind) {
    case 'kill-leader': {
      const leader = await w.leader();
      if (leader === undefined) return { detail: 'no leader to kill' };
      await w.killReplica(leader);
      w.startReplica(leader.name);
      return { detail: `SIGKILL ${leader.name}, restarted under a new identity` };
    }
    case 'stop-leader': {
      const leader = await w.leader();
      if (leader === undefined) return { detail: 'no leader to stop' };
      leader.signal('SIGSTOP');
      await sleep(2 * LEASE_MS);
      leader.signal('SIGCONT');
      return { detail: `SIGSTOP ${leader.name} for ${2 * LEASE_MS} ms (lease ${LEASE_MS} ms), then SIGCONT` };
    }
    case 'restart-apiserver':
      await w.plane.restartApiServer();
      return { detail: 'kube-apiserver stopped and started' };
    case 'restart-etcd':
      await w.plane.restartEtcd();
      return { detail: 'etcd stopped and started' };
    case 'delete-provider-secret': {
      const ns = w.random.pick(providerNamespaces(c));
      await w.core.deleteNamespacedSecret({ namespace: ns, name: PROVIDER_SECRET });
      return { detail: `deleted ${ns}/${PROVIDER_SECRET}` };
    }
    case 'garbage-provider-secret': {
      const ns = w.random.pick(providerNamespaces(c));
      await patchSecret(w, ns, PROVIDER_SECRET, (data) => {
        for (const k of ['ca.crt', 'tls.crt', 'tls.key']) data[k] = w.random.garbage(64 + Math.floor(w.random.between(0, 512))).toString('base64');
      });
      return { detail: `garbage in ${ns}/${PROVIDER_SECRET}` };
    }
    case 'foreign-ca-in-provider-secret': {
      const ns = w.random.pick(providerNamespaces(c));
      const pem = foreignCaPem(w);
      await patchSecret(w, ns, PROVIDER_SECRET, (data) => {
        data['ca.crt'] = Buffer.from(pem).toString('base64');
      });
      return { detail: `a foreign CA in ${ns}/${PROVIDER_SECRET} ca.crt` };
    }
    case 'delete-ca-secret':
      await w.core.deleteNamespacedSecret({ namespace: ESO_NS, name: CA_SECRET });
      return { detail: `deleted ${ESO_NS}/${CA_SECRET}` };
    case 'unlabel-and-relabel': {
      const ns = w.random.pick(providerNamespaces(c).filter((n) => c.labelled.get(n)!.length > 1));
      const service = c.labelled.get(ns)!.at(-1)!;
      const p = w.providers.get(`${ns}/${service}`)!;
      await w.removeTarget(p); // ESO's SecretStore goes first, as an operator would do it
      await w.labelService({ namespace: ns, service }, false);
      c.labelled.set(
        ns,
        c.labelled.get(ns)!.filter((s) => s !== service),
      );
      await c.settle(`unlabelling ${ns}/${service}`);
      await w.labelService({ namespace: ns, service }, true);
      c.labelled.get(ns)!.push(service);
      await c.settle(`labelling ${ns}/${service} again`);
      w.addTarget(p);
      return { detail: `unlabelled ${ns}/${service}, then labelled it again` };
    }
    case 'second-service': {
      const ns = w.random.pick(providerNamespaces(c).filter((n) => c.labelled.get(n)!.length === 1));
      const s: SoakService = { namespace: ns, service: 'extra' };
      await w.labelService(s, true);
      c.labelled.get(ns)!.push(s.service);
      await c.settle(`adding ${ns}/extra`);
      const p = await w.startProvider(s);
      w.addTarget(p);
      await sleep(3000);
      await w.removeTarget(p);
      await w.removeProvider(s);
      await w.core.deleteNamespacedService({ namespace: ns, name: s.service });
      c.labelled.set(
        ns,
        c.labelled.get(ns)!.filter((x) => x !== s.service),
      );
      return { detail: `added a second Service ${ns}/extra with its provider, called it, then removed both` };
    }
    case 'restart-provider': {
      const p = pickProvider(c);
      const window: FailureWindow = { cause: kind, address: p.address, start: Date.now(), end: Infinity };
      await p.stop();
      await sleep(w.random.between(500, 3000));
      await w.runProvider(p);
      // grpc-js reconnects with backoff; calls may fail until it does (bounded by the settle below).
      window.end = Date.now() + 30_000;
      return { detail: `restarted the provider of ${p.address}`, window };
    }
    case 'corrupt-mounted-files': {
      const p = pickProvider(c);
      const volume = w.kubelet.volume(p.spec.certDir);
      await volume.damage({ 'ca.crt': 'not a bundle\n', 'tls.crt': w.random.garbage(300).toString('latin1'), 'tls.key': '' });
      await sleep(3000);
      await volume.resync();
      return { detail: `damaged the mounted files of ${p.address} for 3 s, then the kubelet's sync restored them` };
    }
    case 'emergency-ca-rotation': {
      const window: FailureWindow = { cause: kind, address: '*', start: Date.now(), end: Infinity };
      await patchSecret(w, ESO_NS, CA_SECRET, (_, a) => {
        a[ROTATE_ANNOTATION] = EMERGENCY_ROTATION;
      });
      await c.settle('the emergency CA rotation');
      window.end = Date.now() + 5000;
      return { detail: 'emergency CA rotation requested', window };
    }
    case 'forced-ca-rotation':
      await patchSecret(w, ESO_NS, CA_SECRET, (_, a) => {
        a[ROTATE_ANNOTATION] = `soak-${Date.now()}`;
      });
      return { detail: 'overlap CA rotation requested' };
  }
}
