import type { Duration, Instant } from '../common/time.js';

/*
 * What an adapter observed of an upstream CA source (docs/chaining-to-your-pki.md), as it hands it
 * to the planner with the rest of the snapshot; ca/upstream.ts judges it.
 */

/** Text the adapter read from an object (a Secret's or a ConfigMap's key), or why it could not. */
export type UpstreamText = { readonly ok: true; readonly text: string } | { readonly ok: false; readonly message: string };

/** The state of a cert-manager CertificateRequest, as the adapter reads its conditions. */
export type CaRequestState = 'pending' | 'approved' | 'issued' | 'denied' | 'failed' | 'missing';

/** The request the CA Secret names (annotation {@link CA_REQUEST_ANNOTATION}), as read. */
export interface CaRequestObservation {
  /** The CertificateRequest's name, in ESO's namespace. */
  readonly name: string;
  /** Where it stands: `missing` when no request of ours has that name. */
  readonly state: CaRequestState;
  /** When it entered that state (its creation while pending). */
  readonly since?: Instant;
  /** The issuer's or approver's words, for messages. */
  readonly message: string;
  /** `status.certificate`, once issued: the intermediate, then its chain. */
  readonly certificate?: string;
  /** Set when an issued request's certificate was not read (over the adapter's bound, or not PEM): why, with {@link message} saying more. */
  readonly unread?: 'too_large' | 'malformed';
  /** `status.ca`: a cross-check only, never trusted. */
  readonly ca?: string;
}

/** What the adapter observed of an upstream source. */
export interface UpstreamObservation {
  /** A cert-manager issuer asked through CertificateRequests, or a Secret the user maintains. */
  readonly kind: 'issuer' | 'secret';
  /** The source as the CA Secret records it: `issuer/<Kind>/<name>` or `secret/<name>`. */
  readonly source: string;
  /** The trust anchors: PEM roots the intermediate must chain to. */
  readonly anchors: UpstreamText;
  /** `secret`: the user's Secret's tls.crt (the intermediate, then its chain) and tls.key. */
  readonly secret?: { readonly certificate: UpstreamText; readonly key: UpstreamText };
  /** `issuer`: whether the issuer is Ready. */
  readonly issuer?: { readonly state: 'ready' | 'not_ready' | 'missing'; readonly message: string };
  /** `issuer`: the pending request the CA Secret names, when it names one. */
  readonly request?: CaRequestObservation;
  /** The validity asked of the issuer: the renewal lead scales with what it returned. */
  readonly requestedValidity: Duration;
  /** How long a request may stay pending before it is reported as overdue. */
  readonly requestDeadline: Duration;
}
