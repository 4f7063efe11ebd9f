import { type MemoryStore, ROTATE_ANNOTATION, type SecretTarget } from '@eso-mtls/core';
import { editServices, forceSecretRotation, forceServiceRotation } from './forced-rotation.js';
import type { CallTarget, EsoCaller } from './eso-caller.js';
import type { KubeletVolume } from './kubelet-volume.js';
import type { ReconcileLoop } from './reconcile-loop.js';
import type { ScenarioAction } from './scenario.js';
import type { DemoEvent } from './timeline.js';

/** One provider as the scenario sees it: its namespace, its Services and its mounted folder. */
export interface ScenarioProvider {
  readonly namespace: string;
  /** The Service labelled from the start. */
  readonly service: string;
  /** The Service labelled into the same namespace later. */
  readonly secondService: string;
  readonly volume: KubeletVolume;
  /** Where ESO calls the second Service, once its certificate is served. */
  readonly secondTarget: CallTarget;
}

/** What the scenario acts on. */
export interface ScenarioWorld {
  readonly store: MemoryStore;
  readonly providers: readonly ScenarioProvider[];
  readonly caller: EsoCaller;
  readonly loop: ReconcileLoop;
  readonly record: (event: DemoEvent) => void;
}

/** The name of the Secret the controller writes into every provider namespace. */
const PROVIDER_SECRET = 'external-secrets-provider-tls';

/**
 * Plays scenario actions the way people and the node would: annotations and labels on Services
 * and Secrets (followed by the controller as an informer event would), a Secret deleted, a
 * mounted folder damaged and later rewritten by the kubelet's periodic sync. Remembers what it
 * did, so the run can check that each step had its effect.
 */
export class ScenarioPlayer {
  /** Namespaces whose Secret was deleted, with when. */
  readonly deleted = new Map<string, number>();
  /** Namespaces whose folder was damaged and not yet rewritten by a later delivery. */
  readonly damaged = new Set<string>();
  /** Namespaces whose second Service is labelled. */
  readonly secondLabelled = new Set<string>();
  /** Namespaces whose second Service's label was removed, with when. */
  readonly unlabelled = new Map<string, number>();
  private tokens = 0;

  constructor(
    private readonly world: ScenarioWorld,
    private readonly now: () => number,
  ) {}

  /** Does one action; resolves when its immediate part (a write to a folder, a caller stopped) is done. */
  async play(action: ScenarioAction): Promise<void> {
    const { store, loop, record } = this.world;
    switch (action.kind) {
      case 'rotateService': {
        const p = this.world.providers[action.provider]!;
        const token = this.token();
        forceServiceRotation(store, p.namespace, p.service, token);
        record({ source: 'scenario', subject: `namespace/${p.namespace}`, message: `Service ${p.service} annotated ${ROTATE_ANNOTATION}=${token}` });
        break;
      }
      case 'rotateClient':
      case 'rotateCa': {
        const target: SecretTarget = action.kind === 'rotateCa' ? 'ca' : 'client';
        const token = this.token();
        if (!forceSecretRotation(store, target, token)) {
          record({ source: 'scenario', subject: target, message: `no ${target} Secret to annotate; step skipped` });
          return;
        }
        const what = target === 'ca' ? 'CA Secret' : "ESO's client Secret";
        const why = target === 'ca' ? ' (an overlap rotation: prepare, activate, retire)' : '';
        record({ source: 'scenario', subject: target === 'ca' ? 'CA' : 'ESO client', message: `${what} annotated ${ROTATE_ANNOTATION}=${token}${why}` });
        break;
      }
      case 'deleteSecret': {
        const p = this.world.providers[action.provider]!;
        store.delete({ namespace: p.namespace });
        this.deleted.set(p.namespace, this.now());
        record({
          source: 'scenario',
          subject: `namespace/${p.namespace}`,
          message: `Secret ${PROVIDER_SECRET} deleted (the mounted files stay until a new Secret is delivered)`,
        });
        break;
      }
      case 'corruptFolder': {
        const p = this.world.providers[action.provider]!;
        const content = p.volume.secretContent;
        if (content === undefined) return;
        const certificate = content['tls.crt'] ?? '';
        this.damaged.add(p.namespace);
        record({
          source: 'scenario',
          subject: `namespace/${p.namespace}`,
          message: 'mounted tls.crt damaged on disk (truncated to half), swapped in kubelet-style',
        });
        await p.volume.damage({ ...content, 'tls.crt': certificate.slice(0, Math.floor(certificate.length / 2)) });
        return;
      }
      case 'resyncFolder': {
        const p = this.world.providers[action.provider]!;
        const wrote = await p.volume.resync();
        record({
          source: 'kubelet',
          subject: `namespace/${p.namespace}`,
          message: wrote ? 'periodic sync: folder differed from the Secret, Secret written back' : 'periodic sync: folder already matches the Secret',
        });
        return;
      }
      case 'labelSecondService': {
        const p = this.world.providers[action.provider]!;
        editServices(store, p.namespace, (s) => s, { name: p.secondService });
        this.secondLabelled.add(p.namespace);
        record({
          source: 'scenario',
          subject: `namespace/${p.namespace}`,
          message: `second Service ${p.secondService} labelled into the namespace (ESO calls it once the provider serves its name)`,
        });
        break;
      }
      case 'unlabelSecondService': {
        const p = this.world.providers[action.provider]!;
        if (this.world.caller.calling(p.secondTarget.address)) {
          await this.world.caller.remove(p.secondTarget.address);
          record({ source: 'eso', subject: p.secondTarget.address, message: 'stopped calling it (its SecretStore is deleted before the label)' });
        }
        this.secondLabelled.delete(p.namespace);
        editServices(store, p.namespace, (s) => (s.name === p.secondService ? undefined : s));
        this.unlabelled.set(p.namespace, this.now());
        record({ source: 'scenario', subject: `namespace/${p.namespace}`, message: `label removed from Service ${p.secondService}` });
        break;
      }
    }
    loop.poke();
  }

  /** A fresh `eso-mtls.io/rotate` value, as `kubectl annotate --overwrite` with a timestamp would set. */
  private token(): string {
    return `demo-${++this.tokens}`;
  }
}
