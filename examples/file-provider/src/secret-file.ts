import { parse as parseYaml, stringify as stringifyYaml } from 'yaml';

/**
 * One secret of the data file. `value` (UTF-8 text) or `valueBase64` (any bytes) hold a single
 * value; `properties` hold named values, read with remoteRef.property or as a map; `tags` are
 * matched by GetAllSecrets' find.tags.
 */
export interface FileSecret {
  value?: string;
  valueBase64?: string;
  properties?: Record<string, string>;
  tags?: Record<string, string>;
}

/** The whole data file: `secrets` keyed by their remote key, e.g. `team-a/db/password`. */
export interface SecretFile {
  secrets: Record<string, FileSecret>;
}

/** JSON for `.json` files, YAML for anything else. */
export type SecretFileFormat = 'json' | 'yaml';

/** The format a data file is read and written in, from its name. */
export const formatOf = (path: string): SecretFileFormat => (path.endsWith('.json') ? 'json' : 'yaml');

/** The data file is not valid; the message names the file and the offending entry. */
export class SecretFileError extends Error {
  override readonly name = 'SecretFileError';
}

const isStringMap = (v: unknown): v is Record<string, string> =>
  typeof v === 'object' && v !== null && !Array.isArray(v) && Object.values(v).every((x) => typeof x === 'string');

/** Parses and validates a data file's text. Throws {@link SecretFileError} naming the bad entry. */
export function parseSecretFile(text: string, format: SecretFileFormat, path: string): SecretFile {
  let doc: unknown;
  try {
    doc = format === 'json' ? JSON.parse(text) : parseYaml(text);
  } catch (e) {
    throw new SecretFileError(`${path}: not valid ${format.toUpperCase()}: ${(e as Error).message}`);
  }
  if (doc === null || doc === undefined) return { secrets: {} }; // an empty file is an empty store
  const secrets = (doc as { secrets?: unknown }).secrets ?? {};
  if (typeof doc !== 'object' || typeof secrets !== 'object' || secrets === null || Array.isArray(secrets)) {
    throw new SecretFileError(`${path}: expected an object with a "secrets" map of key -> { value | valueBase64 | properties, tags }`);
  }
  for (const [key, s] of Object.entries(secrets as Record<string, unknown>)) {
    const where = `${path}: secrets[${JSON.stringify(key)}]`;
    if (typeof s !== 'object' || s === null || Array.isArray(s)) throw new SecretFileError(`${where} must be an object`);
    const { value, valueBase64, properties, tags, ...rest } = s as Record<string, unknown>;
    const unknown = Object.keys(rest);
    if (unknown.length > 0) throw new SecretFileError(`${where} has unknown field(s) ${unknown.join(', ')}; allowed: value, valueBase64, properties, tags`);
    if (value !== undefined && typeof value !== 'string') throw new SecretFileError(`${where}.value must be a string`);
    if (valueBase64 !== undefined && (typeof valueBase64 !== 'string' || !/^[A-Za-z0-9+/]*={0,2}$/.test(valueBase64))) {
      throw new SecretFileError(`${where}.valueBase64 must be base64 text`);
    }
    if (value !== undefined && valueBase64 !== undefined) throw new SecretFileError(`${where} has both value and valueBase64; keep one`);
    if (properties !== undefined && !isStringMap(properties)) throw new SecretFileError(`${where}.properties must map names to strings`);
    if (tags !== undefined && !isStringMap(tags)) throw new SecretFileError(`${where}.tags must map names to strings`);
  }
  return { secrets: secrets as Record<string, FileSecret> };
}

/** The text of `file` in `format`, keys sorted so rewrites give small diffs. */
export function serializeSecretFile(file: SecretFile, format: SecretFileFormat): string {
  const sorted = { secrets: Object.fromEntries(Object.entries(file.secrets).sort(([a], [b]) => a.localeCompare(b))) };
  return format === 'json' ? `${JSON.stringify(sorted, null, 2)}\n` : stringifyYaml(sorted);
}

/** A secret's single value as bytes; a secret made only of properties reads as their JSON. */
export function secretBytes(s: FileSecret): Buffer {
  if (s.valueBase64 !== undefined) return Buffer.from(s.valueBase64, 'base64');
  if (s.value !== undefined) return Buffer.from(s.value, 'utf8');
  return Buffer.from(JSON.stringify(s.properties ?? {}), 'utf8');
}
