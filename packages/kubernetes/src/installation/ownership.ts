import type { Ownership } from '@eso-mtls/core';

/** Label on every Secret we write. */
export const MANAGED_BY_LABEL = 'app.kubernetes.io/managed-by';
/** Value of {@link MANAGED_BY_LABEL} on our Secrets. */
export const MANAGED_BY = 'eso-mtls';
/** Label naming what a Secret of ours holds. */
export const COMPONENT_LABEL = 'app.kubernetes.io/component';
/** Annotation carrying the installation that owns a Secret, so two installations never fight over one. */
export const INSTALLATION_ANNOTATION = 'eso-mtls.io/installation';
/**
 * Annotation naming the controller that last wrote a Secret (its Lease holder identity and Event
 * reportingInstance). Not part of ownership: a Secret an older version wrote, without it, is ours alike.
 */
export const WRITER_ANNOTATION = 'eso-mtls.io/written-by';
/** Annotation carrying the fingerprint of the issuing policy of that writer (core's policyFingerprint). */
export const POLICY_ANNOTATION = 'eso-mtls.io/policy';

/** Who writes, under which issuing policy: stamped on every Secret we write. */
export interface WriterStamp {
  /** The controller's identity: Lease holder identity and Event reportingInstance. */
  readonly identity: string;
  /** Fingerprint of its issuing policy. */
  readonly policy: string;
}

/** The three kinds of Secret we write, and their {@link COMPONENT_LABEL} values. */
export type SecretComponent = 'ca' | 'client-tls' | 'provider-tls';

/** Default name of the CA Secret in the ESO namespace. */
export const DEFAULT_CA_SECRET_NAME = 'eso-provider-ca-internal';
/** Default name of the ESO client Secret in the ESO namespace. */
export const DEFAULT_CLIENT_SECRET_NAME = 'eso-provider-client-tls';

/** The minimal view of a Secret's metadata and data the adapter reasons about. */
export interface SecretLike {
  readonly metadata?: {
    readonly name?: string;
    readonly namespace?: string;
    readonly labels?: Readonly<Record<string, string>>;
    readonly annotations?: Readonly<Record<string, string>>;
    readonly resourceVersion?: string;
  };
  readonly type?: string;
  readonly data?: Readonly<Record<string, string>>;
}

/**
 * The installation identity `<esoNamespace>/<caSecretName>`: two installations in one cluster
 * necessarily differ in one of them, and each recognises only Secrets carrying its own.
 */
export function installationId(esoNamespace: string, caSecretName: string): string {
  return `${esoNamespace}/${caSecretName}`;
}

/** Labels and annotations every Secret we write carries. */
export function ownershipMetadata(
  component: SecretComponent,
  installation: string,
  writer: WriterStamp,
): {
  labels: Record<string, string>;
  annotations: Record<string, string>;
} {
  return {
    labels: { [MANAGED_BY_LABEL]: MANAGED_BY, [COMPONENT_LABEL]: component },
    annotations: { [INSTALLATION_ANNOTATION]: installation, [WRITER_ANNOTATION]: writer.identity, [POLICY_ANNOTATION]: writer.policy },
  };
}

/** The writer a Secret names, or undefined when it names none (written by an earlier release, or by hand). */
export function writerOf(secret: SecretLike): { readonly identity: string; readonly policy: string | undefined } | undefined {
  const annotations = secret.metadata?.annotations ?? {};
  const identity = annotations[WRITER_ANNOTATION];
  return identity === undefined || identity === '' ? undefined : { identity, policy: annotations[POLICY_ANNOTATION] };
}

const PLACEHOLDER_TYPES = new Set(['kubernetes.io/tls', 'Opaque']);

/**
 * Who a Secret belongs to: `managed` when it carries our labels for `component` and our
 * installation annotation; `placeholder` when it is someone else's but of type kubernetes.io/tls
 * or Opaque with every data value empty (a chart's placeholder, which we adopt); else `foreign`,
 * including any Secret another eso-mtls installation claims.
 */
export function classifyOwnership(secret: SecretLike, component: SecretComponent, installation: string): Ownership {
  const labels = secret.metadata?.labels ?? {};
  const annotations = secret.metadata?.annotations ?? {};
  if (labels[MANAGED_BY_LABEL] === MANAGED_BY && labels[COMPONENT_LABEL] === component && annotations[INSTALLATION_ANNOTATION] === installation) {
    return 'managed';
  }
  // Another installation's Secret, even an empty one, is never adopted: that would start a fight.
  if (labels[MANAGED_BY_LABEL] === MANAGED_BY && annotations[INSTALLATION_ANNOTATION] !== undefined) return 'foreign';
  const type = secret.type ?? 'Opaque';
  const values = Object.values(secret.data ?? {});
  if (PLACEHOLDER_TYPES.has(type) && values.every((v) => v === '')) return 'placeholder';
  return 'foreign';
}

/** `app.kubernetes.io/component` of our ClusterTrustBundles. */
export const TRUST_BUNDLE_COMPONENT = 'trust-bundle';

/**
 * True when a ClusterTrustBundle of `signerName` was written by this installation: our managed-by
 * and component labels, our installation annotation, and that signer. Only such a bundle is ever
 * rewritten.
 *
 * @internal Shared with \@eso-mtls/controller (`eso-mtls status`); not part of the supported API.
 */
export function isOurTrustBundle(
  bundle: {
    readonly labels?: Readonly<Record<string, string>>;
    readonly annotations?: Readonly<Record<string, string>>;
    readonly signerName?: string;
  },
  signerName: string,
  installation: string,
): boolean {
  return (
    bundle.labels?.[MANAGED_BY_LABEL] === MANAGED_BY &&
    bundle.labels?.[COMPONENT_LABEL] === TRUST_BUNDLE_COMPONENT &&
    bundle.annotations?.[INSTALLATION_ANNOTATION] === installation &&
    bundle.signerName === signerName
  );
}
