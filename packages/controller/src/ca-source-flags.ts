import { type Duration, type Policy, formatDuration, isDnsName } from '@eso-mtls/core';
import {
  type CaSource,
  DEFAULT_CA_REQUEST_DEADLINE,
  DEFAULT_ISSUER_GROUP,
  DEFAULT_TRUST_ANCHORS_KEY,
  type IssuerReference,
  SELF_SIGNED,
  type TrustAnchorsReference,
} from '@eso-mtls/kubernetes';
import { parseDuration } from './duration.js';
import { MAX_CA_REQUEST_DEADLINE, MAX_INTERMEDIATE_DURATION, MIN_CA_REQUEST_DEADLINE, envVarOf, minimumIntermediateDuration } from './flags.js';

/*
 * The --ca-* flags read into the CaSource of the installation (docs/chaining-to-your-pki.md): one
 * pure function, and one small rule per thing that can be wrong with them, each refusal naming the
 * flag, its variable, the value and what to do.
 */

/** The `--ca-*` flags as given, on the command line or in their variables; undefined: not given. */
export interface CaSourceFlags {
  /** `--ca-issuer`: `ClusterIssuer/NAME` or `Issuer/NAME`. */
  readonly issuer?: string | undefined;
  /** `--ca-issuer-group`: the issuer's API group. */
  readonly issuerGroup?: string | undefined;
  /** `--ca-intermediate-duration`: the validity asked of the issuer. */
  readonly intermediateDuration?: string | undefined;
  /** `--ca-request-deadline`: how long a CertificateRequest may stay pending. */
  readonly requestDeadline?: string | undefined;
  /** `--ca-from-secret`: the Secret holding the intermediate and its key. */
  readonly fromSecret?: string | undefined;
  /** `--ca-trust-anchors`: `Secret/NAME[/KEY]` or `ConfigMap/NAME[/KEY]`. */
  readonly trustAnchors?: string | undefined;
}

/** What the flags are judged against: the rest of the configuration. */
export interface CaSourceContext {
  /** The certificate policy (its CA lookahead bounds the intermediate's duration). */
  readonly policy: Pick<Policy, 'caLookahead'>;
  /** Whether the CA keys are in an HSM (`--hsm-module`). */
  readonly hsm: boolean;
  /** The Secrets the controller writes, each with what names it (`--ca-secret-name`): none may be an input. */
  readonly writtenSecrets: readonly (readonly [namedBy: string, name: string])[];
}

/** A `--ca-*` flag, or a combination of them, the controller cannot use; the message says which, and what to do. */
export class CaSourceFlagError extends Error {
  /** Always `CaSourceFlagError`. */
  override readonly name = 'CaSourceFlagError';
}

const ISSUER_KINDS = ['ClusterIssuer', 'Issuer'] as const;
/** A Kind name, as an external issuer's CRD gives it: a capital letter, then letters and digits. */
const KIND = /^[A-Z][A-Za-z0-9]{0,62}$/;
const ANCHOR_KINDS = ['Secret', 'ConfigMap'] as const;
/** A Secret or ConfigMap data key, as the apiserver validates it. */
const DATA_KEY = /^[-._a-zA-Z0-9]{1,253}$/;

/** `--flag (env VARIABLE)`, as every refusal names a flag. */
const named = (flag: string): string => `--${flag} (env ${envVarOf(flag)})`;

/**
 * The CA source the `--ca-*` flags describe: self-signed when none is given, else a cert-manager
 * issuer or a user's Secret, each with its trust anchors. Throws {@link CaSourceFlagError} for
 * the first thing wrong. Pure: no I/O.
 */
export function parseCaSourceFlags(flags: CaSourceFlags, context: CaSourceContext): CaSource {
  refuseBothSources(flags);
  refuseStrayIssuerFlags(flags);
  if (flags.issuer !== undefined) {
    const issuer = parseIssuer(flags.issuer, flags.issuerGroup ?? DEFAULT_ISSUER_GROUP);
    const duration = flags.intermediateDuration === undefined ? undefined : parseIntermediateDuration(flags.intermediateDuration, context);
    const requestDeadline = flags.requestDeadline === undefined ? DEFAULT_CA_REQUEST_DEADLINE : parseRequestDeadline(flags.requestDeadline);
    return {
      kind: 'issuer',
      issuer,
      trustAnchors: requireTrustAnchors('ca-issuer', flags, context),
      ...(duration === undefined ? {} : { duration }),
      requestDeadline,
    };
  }
  if (flags.fromSecret !== undefined) {
    const secretName = parseName('ca-from-secret', flags.fromSecret, flags.fromSecret);
    refuseWrittenSecret('ca-from-secret', secretName, context);
    refuseFromSecretWithHsm(context);
    return { kind: 'secret', secretName, trustAnchors: requireTrustAnchors('ca-from-secret', flags, context) };
  }
  refuseAnchorsWithoutSource(flags);
  return SELF_SIGNED;
}

/** An upstream source's anchors: required, and never a Secret the controller writes. */
function requireTrustAnchors(sourceFlag: string, flags: CaSourceFlags, context: CaSourceContext): TrustAnchorsReference {
  if (flags.trustAnchors === undefined) {
    throw new CaSourceFlagError(
      `--${sourceFlag} needs ${named('ca-trust-anchors')}: the PEM roots the intermediate must chain to, as Secret/NAME[/KEY] or ConfigMap/NAME[/KEY] in ESO's namespace. Nothing else is trusted as an anchor (cert-manager's status.ca is best effort, and only cross-checked)`,
    );
  }
  const trustAnchors = parseTrustAnchors(flags.trustAnchors);
  if (trustAnchors.kind === 'Secret') refuseWrittenSecret('ca-trust-anchors', trustAnchors.name, context);
  return trustAnchors;
}

/** One source at a time: the intermediate comes from an issuer or from a Secret, never both. */
function refuseBothSources(flags: CaSourceFlags): void {
  if (flags.issuer !== undefined && flags.fromSecret !== undefined) {
    throw new CaSourceFlagError(
      `${named('ca-issuer')} and ${named('ca-from-secret')} are both set: the CA comes from one source, a cert-manager issuer or a Secret you maintain. Set one of them`,
    );
  }
}

/** The issuer's settings mean nothing without an issuer: a typo in the source flag must not go unnoticed. */
function refuseStrayIssuerFlags(flags: CaSourceFlags): void {
  if (flags.issuer !== undefined) return;
  const stray = (
    [
      ['ca-issuer-group', flags.issuerGroup],
      ['ca-intermediate-duration', flags.intermediateDuration],
      ['ca-request-deadline', flags.requestDeadline],
    ] as const
  ).find(([, value]) => value !== undefined);
  if (stray) throw new CaSourceFlagError(`${named(stray[0])} is set but --ca-issuer is not: it applies to a cert-manager issuer only. Set both, or neither`);
}

/** The self-signed CA is its own anchor: anchors without an upstream source are a mistake, not a no-op. */
function refuseAnchorsWithoutSource(flags: CaSourceFlags): void {
  if (flags.trustAnchors !== undefined) {
    throw new CaSourceFlagError(
      `${named('ca-trust-anchors')} is set but neither --ca-issuer nor --ca-from-secret is: the self-signed CA is its own trust anchor. Set a source, or remove --ca-trust-anchors`,
    );
  }
}

/** A key read from a Secret cannot be put into the HSM by us; an issuer's intermediate can have its key made there. */
function refuseFromSecretWithHsm(context: CaSourceContext): void {
  if (context.hsm) {
    throw new CaSourceFlagError(
      `${named('ca-from-secret')} cannot be used with --hsm-module: the intermediate's key would be read from the Secret's tls.key, and the controller never puts a key into the HSM. With an HSM, use --ca-issuer: the intermediate's key is then generated in the token`,
    );
  }
}

/** An input the user maintains is never one of the Secrets the controller writes. */
function refuseWrittenSecret(flag: string, name: string, context: CaSourceContext): void {
  const written = context.writtenSecrets.find(([, n]) => n === name);
  if (written) {
    throw new CaSourceFlagError(
      `${named(flag)} names the Secret ${JSON.stringify(name)}, which the controller writes (${written[0]}): an input must be a Secret you maintain. Name another`,
    );
  }
}

/** `Kind/NAME` (or `Kind/NAME/KEY` when `withKey`), the kind one of `kinds`; the parts, or a refusal naming what is wrong. */
function parseReference<K extends string>(
  flag: string,
  text: string,
  kinds: readonly K[],
  withKey: boolean,
): { readonly kind: K; readonly name: string; readonly key: string | undefined } {
  const shape = `${kinds.map((k) => `${k}/NAME${withKey ? '[/KEY]' : ''}`).join(' or ')}`;
  const parts = text.split('/');
  if (parts.length < 2 || parts.length > (withKey ? 3 : 2)) {
    throw new CaSourceFlagError(`invalid value ${JSON.stringify(text)} for ${named(flag)}: accepts ${shape}`);
  }
  const [kind, name, key] = parts as [string, string, string | undefined];
  if (!kinds.includes(kind as K)) {
    throw new CaSourceFlagError(
      `invalid value ${JSON.stringify(text)} for ${named(flag)}: the kind ${JSON.stringify(kind)} is none of ${kinds.join(', ')} (kinds are case-sensitive); accepts ${shape}`,
    );
  }
  parseName(flag, text, name);
  if (key !== undefined && !(DATA_KEY.test(key) && key !== '.' && key !== '..')) {
    throw new CaSourceFlagError(
      `invalid value ${JSON.stringify(text)} for ${named(flag)}: the key ${JSON.stringify(key)} is not a data key (1 to 253 letters, digits, '-', '_' or '.')`,
    );
  }
  return { kind: kind as K, name, key };
}

/** An object name in ESO's namespace: a DNS-1123 subdomain, as the apiserver requires of a Secret, ConfigMap or issuer. */
function parseName(flag: string, text: string, name: string): string {
  if (!isDnsName(name)) {
    throw new CaSourceFlagError(
      `invalid value ${JSON.stringify(text)} for ${named(flag)}: ${JSON.stringify(name)} is not a DNS-1123 name (lowercase letters, digits, '-' and '.', at most 253 characters)`,
    );
  }
  return name;
}

/** `--ca-trust-anchors`: the Secret or ConfigMap key holding the PEM roots, `ca.crt` unless named. */
function parseTrustAnchors(text: string): TrustAnchorsReference {
  const { kind, name, key } = parseReference('ca-trust-anchors', text, ANCHOR_KINDS, true);
  return { kind, name, key: key ?? DEFAULT_TRUST_ANCHORS_KEY };
}

/**
 * `--ca-issuer` with `--ca-issuer-group`. CRD groups are DNS names with at least one dot. In
 * cert-manager's group the kind is `ClusterIssuer` or `Issuer`; an external issuer's group has
 * kinds of its own (`AWSPCAClusterIssuer`), any Kind name, whose scope the controller discovers.
 */
function parseIssuer(text: string, group: string): IssuerReference {
  if (!isDnsName(group) || !group.includes('.')) {
    throw new CaSourceFlagError(`invalid value ${JSON.stringify(group)} for ${named('ca-issuer-group')}: accepts an API group such as cert-manager.io`);
  }
  if (group === DEFAULT_ISSUER_GROUP) {
    const { kind, name } = parseReference('ca-issuer', text, ISSUER_KINDS, false);
    return { kind, name, group };
  }
  const [kind, name, ...rest] = text.split('/');
  if (kind === undefined || name === undefined || rest.length > 0 || !KIND.test(kind)) {
    throw new CaSourceFlagError(
      `invalid value ${JSON.stringify(text)} for ${named('ca-issuer')}: accepts KIND/NAME, the kind of an issuer of ${group} (a Kind name such as AWSPCAClusterIssuer, case-sensitive)`,
    );
  }
  return { kind, name: parseName('ca-issuer', text, name), group };
}

/** `--ca-intermediate-duration`: a duration from twice the CA lookahead to what cert-manager can read. */
function parseIntermediateDuration(text: string, context: CaSourceContext): Duration {
  const d = parseDuration(text);
  const minimum = minimumIntermediateDuration(context.policy);
  if (d === undefined || d > MAX_INTERMEDIATE_DURATION) {
    throw new CaSourceFlagError(
      `invalid value ${JSON.stringify(text)} for ${named('ca-intermediate-duration')}: accepts a duration such as 500ms, 15s, 10m or 1h30m, from ${formatDuration(minimum)} to ${formatDuration(MAX_INTERMEDIATE_DURATION)}`,
    );
  }
  if (d < minimum) {
    throw new CaSourceFlagError(
      `invalid value ${JSON.stringify(text)} for ${named('ca-intermediate-duration')}: too short, the least is ${formatDuration(minimum)}. An intermediate is renewed ${formatDuration(context.policy.caLookahead)} (the CA lookahead) before its notAfter, so a shorter one would spend more of its life being replaced than signing. Ask for ${formatDuration(minimum)} or more, or leave it unset for the CA validity`,
    );
  }
  return d;
}

/** `--ca-request-deadline`: from a minute to a week. */
function parseRequestDeadline(text: string): Duration {
  const d = parseDuration(text);
  if (d === undefined || d < MIN_CA_REQUEST_DEADLINE || d > MAX_CA_REQUEST_DEADLINE) {
    throw new CaSourceFlagError(
      `invalid value ${JSON.stringify(text)} for ${named('ca-request-deadline')}: accepts a duration such as 500ms, 15s, 10m or 1h30m, from ${formatDuration(MIN_CA_REQUEST_DEADLINE)} to ${formatDuration(MAX_CA_REQUEST_DEADLINE)}`,
    );
  }
  return d;
}
