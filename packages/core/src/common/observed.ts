/**
 * What reading a stored value gives: the value, or why it cannot be used. Secrets are read this way
 * (secret/observe.ts), and the rules that judge a leaf (policy/rules.ts) take the result as it is.
 */

/** Why the data of a Secret cannot be used as it is. */
export type DataProblem =
  | 'empty' // no data at all, or every value empty
  | 'garbage_pem' // a value that is not PEM / not a parseable certificate or key
  | 'missing_key' // certificate present, key absent/empty
  | 'missing_certificate' // key present, certificate absent/empty
  | 'key_mismatch' // key does not match certificate
  | 'multiple_certificates' // several certificates where one was expected (tls.crt, ca.crt of CA secret)
  | 'weak_key' // an RSA key whose public exponent is not 65537
  | 'not_a_ca'; // a certificate without basicConstraints cA where a CA is expected

/** Either a usable value, or the problem that makes it unusable with a human-readable detail. */
export type Observed<T> = { readonly ok: true; readonly value: T } | { readonly ok: false; readonly problem: DataProblem; readonly detail: string };
