import type { CryptoBackend } from '@eso-mtls/core';
import type { KubeRestClient } from '../client/rest-client.js';
import type { EventRecorder } from '../events/event-recorder.js';
import type { InformerOptions, InformerStats } from '../informers/informer.js';
import type { Installation } from '../installation/installation.js';
import type { Logger } from '../runtime/logger.js';
import type { CaUpstream } from '../rounds/ca-upstream.js';
import type { SecretWriter } from '../rounds/secret-writer.js';
import { CaUpstreamSource } from './ca-upstream-source.js';
import { UpstreamInformers } from './upstream-informers.js';

/** What the upstream mode is built from: the adapter's shared parts. */
export interface UpstreamModeDependencies {
  readonly api: KubeRestClient;
  readonly installation: Installation;
  readonly informerOptions: InformerOptions;
  readonly crypto: CryptoBackend;
  readonly logger: Logger;
  /** A request or the pending key's write failed (the CA rotation failure counter). */
  readonly onFailure: () => void;
}

/**
 * An upstream CA source beside the Secret rounds (docs/chaining-to-your-pki.md): its caches, which
 * wake the reconciler, and the {@link CaUpstream} the rounds plan with, connected to their writer
 * and Event recorder.
 */
export class UpstreamMode {
  readonly informers: UpstreamInformers;

  private constructor(
    private readonly deps: UpstreamModeDependencies,
    private readonly source: Exclude<Installation['caSource'], { kind: 'self-signed' }>,
  ) {
    this.informers = new UpstreamInformers(deps.api, source, deps.installation.esoNamespace, deps.informerOptions);
  }

  /** The mode for the installation's CA source; undefined for the self-signed CA. */
  static of(deps: UpstreamModeDependencies): UpstreamMode | undefined {
    const source = deps.installation.caSource;
    return source.kind === 'self-signed' ? undefined : new UpstreamMode(deps, source);
  }

  /** The source the rounds plan with, writing through their writer and recording through their recorder. */
  connect(parts: { readonly writer: SecretWriter; readonly events: EventRecorder }): CaUpstream {
    const { api, installation, crypto, logger, onFailure } = this.deps;
    return new CaUpstreamSource({ api, installation, source: this.source, informers: this.informers, crypto, logger, onFailure, ...parts });
  }

  /** Reconciles on every change of the source's caches. */
  subscribe(trigger: () => void): () => void {
    return this.informers.onChange(() => trigger());
  }

  start(): Promise<void> {
    return this.informers.start();
  }

  stop(): Promise<void> {
    return this.informers.stop();
  }

  get hasSynced(): boolean {
    return this.informers.hasSynced;
  }

  stats(): InformerStats {
    return this.informers.stats();
  }
}
