import {
  CA_REQUEST_ANNOTATION,
  type CryptoBackend,
  type Instant,
  type Plan,
  type SecretState,
  type UpstreamObservation,
  materializeCaRequest,
} from '@eso-mtls/core';
import type { V1Secret } from '@kubernetes/client-node';
import type { KubeRestClient } from '../client/rest-client.js';
import type { EventRecorder } from '../events/event-recorder.js';
import type { Informer } from '../informers/informer.js';
import type { Installation } from '../installation/installation.js';
import type { Logger } from '../runtime/logger.js';
import type { CaUpstream, CaUpstreamResult } from '../rounds/ca-upstream.js';
import type { SecretWriter } from '../rounds/secret-writer.js';
import { type CertificateRequestObject, caRequestManifest, caRequestStatus, createCaRequest, deleteCaRequest, isOurCaRequest } from './certificate-requests.js';
import { issuerReadinessOf, issuerUnreadable } from './issuer-readiness.js';
import { type UpstreamReadRefusal, describeObject, unreadable as unreadableRefusal } from './upstream-read.js';
import { type UpstreamSource, sourceName, upstreamObservation } from './observation.js';
import { sourceSecretOf } from './source-secret.js';
import { trustAnchorsOf } from './trust-anchors.js';
import type { UpstreamInformers } from './upstream-informers.js';

/** What the source is built from. */
export interface CaUpstreamSourceDependencies {
  readonly api: KubeRestClient;
  readonly installation: Installation;
  readonly source: UpstreamSource;
  readonly informers: UpstreamInformers;
  readonly writer: SecretWriter;
  readonly crypto: CryptoBackend;
  readonly events: EventRecorder;
  readonly logger: Logger;
  /** A request or the pending key's write failed. */
  readonly onFailure: () => void;
}

/**
 * An upstream CA source on the adapter's caches: what it holds for each plan, and the requests the
 * plans ask for. Requests we made and no longer need (answered, refused, superseded) are deleted
 * once they are final, or a reconcile interval old, so a request just made is never taken for one
 * left over while the CA Secret's cache catches up.
 */
/** The refusal of an input whose cache has never listed (a 403 when the controller's RBAC does not name it), or undefined once it has. */
function unreadableCache(informer: Pick<Informer<never>, 'hasSynced' | 'lastError'>, object: string, flag: string): UpstreamReadRefusal | undefined {
  const error = informer.hasSynced ? undefined : informer.lastError;
  return error && unreadableRefusal(object, error, `check the controller's RBAC on it (its resourceNames), or fix ${flag}`);
}

export class CaUpstreamSource implements CaUpstream {
  private readonly name: string;

  constructor(private readonly deps: CaUpstreamSourceDependencies) {
    this.name = sourceName(deps.source);
  }

  observe(caSecret: SecretState | undefined): UpstreamObservation {
    const { source, informers, installation } = this.deps;
    const namespace = installation.esoNamespace;
    const { trustAnchors } = source;
    const anchors =
      unreadableCache(informers.anchors, describeObject(trustAnchors.kind, namespace, trustAnchors.name), '--ca-trust-anchors') ??
      trustAnchorsOf(informers.anchors.get(namespace, trustAnchors.name), trustAnchors, namespace);
    if (source.kind === 'secret') {
      const secret =
        unreadableCache(informers.sourceSecret!, describeObject('Secret', namespace, source.secretName), '--ca-from-secret') ??
        sourceSecretOf(informers.sourceSecret!.get(namespace, source.secretName), namespace, source.secretName);
      return upstreamObservation(source, installation, { anchors, secret });
    }
    const cache = informers.issuer!;
    const unreadable = cache.unreadable;
    const issuer = unreadable
      ? issuerUnreadable(source.issuer, namespace, unreadable.reason, unreadable.detail, cache.served)
      : issuerReadinessOf(cache.object, source.issuer, namespace, cache.served);
    const name = caSecret?.annotations[CA_REQUEST_ANNOTATION];
    const request = name ? { name, object: informers.requests!.get(namespace, name) } : undefined;
    return upstreamObservation(source, installation, { anchors, issuer, ...(request ? { request } : {}) });
  }

  async act(plan: Plan, caSecret: { readonly state: SecretState | undefined; readonly object: V1Secret | undefined }, now: Instant): Promise<CaUpstreamResult> {
    let result: CaUpstreamResult = { written: 0, stale: 0, failed: 0 };
    let named = caSecret.state?.annotations[CA_REQUEST_ANNOTATION];
    if (plan.upstream?.request && !plan.ca && this.deps.source.kind === 'issuer') {
      const sent = await this.send(plan, caSecret);
      result = sent.result;
      named = sent.name ?? named;
    }
    const pruned = await this.prune(named, now);
    return { ...result, failed: result.failed + pruned };
  }

  /** Stores a new pending key (when asked for one) and sends its request. */
  private async send(
    plan: Plan,
    caSecret: { readonly state: SecretState | undefined; readonly object: V1Secret | undefined },
  ): Promise<{ result: CaUpstreamResult; name?: string }> {
    const { writer, installation, api, logger, events } = this.deps;
    const source = this.deps.source as Extract<UpstreamSource, { kind: 'issuer' }>;
    const where = { kind: 'Secret' as const, namespace: installation.esoNamespace, name: installation.caSecretName };
    try {
      const material = await materializeCaRequest(plan, caSecret.state, this.deps.crypto);
      let written = 0;
      if (material.write) {
        const outcome = await writer.write(material.write, caSecret.object);
        if (outcome.kind === 'stale') return { result: { written: 0, stale: 1, failed: 0 } };
        if (outcome.kind === 'fenced' || outcome.kind === 'terminating') return { result: { written: 0, stale: 0, failed: 0 } };
        if (outcome.kind === 'failed') throw new Error(`storing the pending CA key in Secret ${where.namespace}/${where.name} failed: ${outcome.message}`);
        written++;
      }
      const manifest = caRequestManifest({
        namespace: installation.esoNamespace,
        installation: installation.id,
        csrPem: material.csrPem,
        issuer: source.issuer,
        duration: source.duration ?? installation.policy.caValidity,
      });
      const { created } = await createCaRequest(api, manifest);
      if (created) written++;
      logger.info(
        { source: this.name, request: material.name, reason: plan.upstream!.request!.reason },
        `asked ${this.name} for an intermediate: ${material.message}`,
      );
      events.record(where, 'Normal', 'CaRequested', `${material.message}: CertificateRequest ${installation.esoNamespace}/${material.name}`);
      return { result: { written, stale: 0, failed: 0 }, name: material.name };
    } catch (e) {
      const message = `asking ${this.name} for an intermediate failed: ${(e as Error).message}`;
      events.reportFailure(this.deps.onFailure, [where], 'Failed', message);
      logger.warn({ source: this.name, error: (e as Error).message }, 'asking the upstream issuer for an intermediate failed; retrying');
      return { result: { written: 0, stale: 0, failed: 1 } };
    }
  }

  /** Deletes our requests the CA Secret no longer names, once final or a reconcile interval old; returns the failures. */
  private async prune(named: string | undefined, now: Instant): Promise<number> {
    const { informers, installation, api, logger } = this.deps;
    if (!informers.requests) return 0;
    const namespace = installation.esoNamespace;
    const done = (r: CertificateRequestObject): boolean => {
      const state = caRequestStatus(r).state;
      const created = Date.parse(r.metadata.creationTimestamp ?? '');
      return state === 'issued' || state === 'denied' || state === 'failed' || !(now - created < installation.policy.reconcileInterval);
    };
    let failed = 0;
    for (const r of [...informers.requests.list()]) {
      if (r.metadata.name === named || !isOurCaRequest(r, installation.id) || !done(r)) continue;
      try {
        await deleteCaRequest(api, namespace, r.metadata.name, r.metadata.uid);
      } catch (e) {
        failed++;
        logger.warn(
          { source: this.name, request: r.metadata.name, error: (e as Error).message },
          'deleting a CertificateRequest no longer needed failed; retrying',
        );
      }
    }
    return failed;
  }
}
