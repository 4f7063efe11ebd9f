import { PROVIDER_SECRET_NAME, type SecretTarget, type SecretWrite, describeTarget } from '@eso-mtls/core';
import type { V1Secret } from '@kubernetes/client-node';
import { apiErrorOf, isNamespaceTerminating } from '../client/api-error.js';
import type { Installation } from '../installation/installation.js';
import { type SecretComponent, ownershipMetadata } from '../installation/ownership.js';
import { type KubeRestClient, WriteFencedError, corePath } from '../client/rest-client.js';

/** Where a target lives, and what we call it. */
export interface SecretLocation {
  readonly namespace: string;
  readonly name: string;
  readonly component: SecretComponent;
  /** Type for a Secret we create (an adopted placeholder keeps its own). */
  readonly type: 'Opaque' | 'kubernetes.io/tls';
}

/** The outcome of one write. */
export type WriteOutcome =
  | { readonly kind: 'written'; readonly secret: V1Secret }
  /** 409 AlreadyExists / Conflict, or 404 on update: the Secret moved on; re-read and re-plan. */
  | { readonly kind: 'stale'; readonly status: 'AlreadyExists' | 'Conflict' | 'NotFound'; readonly message: string }
  /** writesAllowed() said no (leadership lost): nothing was sent. */
  | { readonly kind: 'fenced' }
  /** 403 NamespaceTerminating: the namespace is being deleted, so nothing new is created there. Expected, not a failure. */
  | { readonly kind: 'terminating'; readonly namespace: string; readonly message: string }
  | { readonly kind: 'failed'; readonly code: number | undefined; readonly message: string };

/**
 * Writes the core's {@link SecretWrite}s: POST to create, PUT carrying the planned-from
 * resourceVersion to update (never server-side apply, so two replicas cannot both believe they
 * wrote the CA), never DELETE, and never any name but the three Secrets we own.
 */
export class SecretWriter {
  constructor(
    private readonly api: KubeRestClient,
    /** Where our three Secrets are, and the stamp every write carries. */
    private readonly installation: Installation,
    /** Checked immediately before every request; false stops writes at once. */
    private readonly writesAllowed: () => boolean,
  ) {}

  /** Namespace, name, component and type of a target. */
  locate(target: SecretTarget): SecretLocation {
    const { esoNamespace, caSecretName, clientSecretName } = this.installation;
    if (target === 'ca') return { namespace: esoNamespace, name: caSecretName, component: 'ca', type: 'Opaque' };
    if (target === 'client') return { namespace: esoNamespace, name: clientSecretName, component: 'client-tls', type: 'kubernetes.io/tls' };
    return { namespace: target.namespace, name: PROVIDER_SECRET_NAME, component: 'provider-tls', type: 'kubernetes.io/tls' };
  }

  /**
   * Sends one write. `existing` is the cached Secret the write was planned from (required for an
   * update: its labels, annotations and type are kept, ours merged over them).
   */
  async write(write: SecretWrite, existing: V1Secret | undefined): Promise<WriteOutcome> {
    const where = this.locate(write.target);
    this.assertOurs(where);
    const ours = ownershipMetadata(where.component, this.installation.id, this.installation.writer);
    const data: Record<string, string> = {};
    for (const [key, text] of Object.entries(write.data)) data[key] = Buffer.from(text, 'utf8').toString('base64');
    if (!this.writesAllowed()) return { kind: 'fenced' };
    try {
      if (write.create) {
        const secret = await this.api.create<V1Secret>(corePath('secrets', where.namespace), {
          apiVersion: 'v1',
          kind: 'Secret',
          type: where.type,
          data,
          metadata: { name: where.name, namespace: where.namespace, labels: ours.labels, annotations: { ...ours.annotations, ...write.annotations } },
        });
        return { kind: 'written', secret };
      }
      if (!existing || write.base === undefined) {
        return { kind: 'failed', code: undefined, message: `${describeTarget(write.target)}: update without the Secret it was planned from` };
      }
      const meta = existing.metadata ?? {};
      const secret = await this.api.replace<V1Secret>(corePath('secrets', where.namespace, where.name), {
        apiVersion: 'v1',
        kind: 'Secret',
        type: existing.type ?? where.type,
        data,
        metadata: {
          name: where.name,
          namespace: where.namespace,
          resourceVersion: write.base,
          labels: { ...meta.labels, ...ours.labels },
          annotations: { ...meta.annotations, ...ours.annotations, ...write.annotations },
          ...(meta.ownerReferences ? { ownerReferences: meta.ownerReferences } : {}),
          ...(meta.finalizers ? { finalizers: meta.finalizers } : {}),
        },
      });
      return { kind: 'written', secret };
    } catch (e) {
      if (e instanceof WriteFencedError) return { kind: 'fenced' };
      const error = apiErrorOf(e);
      if (error.code === 409) return { kind: 'stale', status: error.reason === 'AlreadyExists' ? 'AlreadyExists' : 'Conflict', message: error.message };
      if (error.code === 404 && !write.create) return { kind: 'stale', status: 'NotFound', message: error.message };
      if (isNamespaceTerminating(error)) return { kind: 'terminating', namespace: where.namespace, message: error.message };
      return { kind: 'failed', code: error.code, message: error.message };
    }
  }

  /** GET of one of our Secrets, after a write found it moved on. Undefined if it does not exist. */
  async read(target: SecretTarget): Promise<V1Secret | undefined> {
    const where = this.locate(target);
    this.assertOurs(where);
    try {
      return await this.api.get<V1Secret>(corePath('secrets', where.namespace, where.name));
    } catch (e) {
      if (apiErrorOf(e).code === 404) return undefined;
      throw e;
    }
  }

  // A second line of defence behind locate(): a bug elsewhere must not write a fourth name.
  private assertOurs(where: SecretLocation): void {
    const { esoNamespace, caSecretName, clientSecretName } = this.installation;
    const ok = where.name === PROVIDER_SECRET_NAME || ((where.name === caSecretName || where.name === clientSecretName) && where.namespace === esoNamespace);
    if (!ok)
      throw new Error(
        `refusing to write Secret ${where.namespace}/${where.name}: only ${PROVIDER_SECRET_NAME}, ${esoNamespace}/${caSecretName} and ${esoNamespace}/${clientSecretName} are ours`,
      );
  }
}
