import type { Duration } from '@eso-mtls/core';

/*
 * Where the CA that signs every leaf comes from (docs/chaining-to-your-pki.md). The self-signed
 * CA is the default and behaves as it always has; the two upstream sources give an intermediate
 * that chains to the organisation's PKI, verified against trust anchors the user names.
 */

/** A PEM bundle of trust anchors: one key of a Secret or a ConfigMap in ESO's namespace. */
export interface TrustAnchorsReference {
  readonly kind: 'Secret' | 'ConfigMap';
  readonly name: string;
  /** The data key holding the PEM roots (default `ca.crt`). */
  readonly key: string;
}

/**
 * A cert-manager issuer: `Issuer` or `ClusterIssuer` of cert-manager.io, or an external issuer's
 * kind in its own group (`AWSPCAClusterIssuer`, `StepIssuer`). A namespaced kind is the one in
 * ESO's namespace; the scope is what the apiserver's discovery says.
 */
export interface IssuerReference {
  readonly kind: string;
  readonly name: string;
  /** Its API group (default `cert-manager.io`; external issuers have their own). */
  readonly group: string;
}

/** The CA source of an installation. */
export type CaSource =
  | { readonly kind: 'self-signed' }
  | {
      /** The intermediate is asked of a cert-manager issuer through CertificateRequests. */
      readonly kind: 'issuer';
      readonly issuer: IssuerReference;
      readonly trustAnchors: TrustAnchorsReference;
      /** The validity asked for (`spec.duration`); the issuer may return less. Default: the policy's CA validity. */
      readonly duration?: Duration;
      /** How long a request may stay unapproved or unissued before it is reported as overdue (default 1 h). */
      readonly requestDeadline: Duration;
    }
  | {
      /** The intermediate and its key are read from a Secret the user maintains (tls.crt, tls.key); never written. */
      readonly kind: 'secret';
      readonly secretName: string;
      readonly trustAnchors: TrustAnchorsReference;
    };

/** The default source: a self-signed root made and rotated by the controller. */
export const SELF_SIGNED: CaSource = Object.freeze({ kind: 'self-signed' });

/** Default data key of a trust-anchor reference. */
export const DEFAULT_TRUST_ANCHORS_KEY = 'ca.crt';

/** Default API group of an issuer reference. */
export const DEFAULT_ISSUER_GROUP = 'cert-manager.io';

/** Default deadline of a pending CertificateRequest. */
export const DEFAULT_CA_REQUEST_DEADLINE: Duration = 60 * 60 * 1000;
