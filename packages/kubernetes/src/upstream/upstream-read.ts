import { apiErrorOf } from '../client/api-error.js';
import type { KubeRestClient } from '../client/rest-client.js';

/*
 * What reading an upstream input (the user's Secret, the trust anchors) can find wrong, named the
 * same for each so the adapter reports them alike.
 */

/** Why an upstream input was not taken: no such object, no such key in it, over the PEM bound, or the controller may not read it. */
export type UpstreamReadProblem = 'not_found' | 'missing_key' | 'too_large' | 'unreadable';

/** An upstream input not taken, and a message naming the object, the key and what to do. */
export interface UpstreamReadRefusal {
  readonly ok: false;
  readonly problem: UpstreamReadProblem;
  readonly message: string;
}

/** The few calls these readers make: GET only. */
export type UpstreamReader = Pick<KubeRestClient, 'get'>;

/** `kind namespace/name`, as every message names the object. */
export const describeObject = (kind: string, namespace: string, name: string): string => `${kind} ${namespace}/${name}`;

/** GET of one object, or undefined when the apiserver says 404; other errors are thrown as they came. */
export async function getIfExists<T>(client: UpstreamReader, path: string): Promise<T | undefined> {
  try {
    return await client.get<T>(path);
  } catch (e) {
    if (apiErrorOf(e).code === 404) return undefined;
    throw e;
  }
}

/** The `not_found` refusal of an object. */
export const notFound = (object: string, hint: string): UpstreamReadRefusal => ({
  ok: false,
  problem: 'not_found',
  message: `${object} does not exist; ${hint}`,
});

/** Most characters of an apiserver error a message quotes. */
const QUOTED_ERROR = 300;

/** An apiserver error as a message quotes it: its first {@link QUOTED_ERROR} characters. */
export const quoted = (error: Error): string => error.message.slice(0, QUOTED_ERROR);

/**
 * The `unreadable` refusal of an object whose cache has never listed: the apiserver's answer (a 403
 * when the controller's RBAC does not name it), and what to check.
 */
export const unreadable = (object: string, error: Error, hint: string): UpstreamReadRefusal => ({
  ok: false,
  problem: 'unreadable',
  message: `${object} cannot be read: ${quoted(error)}; ${hint}`,
});

/** Most keys a `missing_key` message lists, so an object with many keys does not make a long message. */
const LISTED_KEYS = 8;

/** The `missing_key` refusal of a key of an object, naming the keys it has (the first few). */
export function missingKey(object: string, key: string, present: readonly string[]): UpstreamReadRefusal {
  const listed = present.slice(0, LISTED_KEYS).map((k) => JSON.stringify(k.slice(0, 253)));
  const more = present.length > LISTED_KEYS ? ` and ${present.length - LISTED_KEYS} more` : '';
  return {
    ok: false,
    problem: 'missing_key',
    message: `${object} has no key ${JSON.stringify(key)} (it has ${listed.length === 0 ? 'none' : listed.join(', ')}${more})`,
  };
}
