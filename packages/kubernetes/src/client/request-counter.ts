/** Kubernetes API verbs, as the apiserver's audit log names them. */
export type ApiVerb = 'list' | 'watch' | 'get' | 'create' | 'update' | 'patch' | 'delete';

/**
 * Counts the API requests the adapter makes, by verb and resource (`secrets`, `services`,
 * `events`), so tests and benchmarks can assert what steady state costs.
 */
export class RequestCounter {
  private readonly counts = new Map<string, number>();

  /** Records one request. */
  record(verb: ApiVerb, resource: string): void {
    const key = `${verb} ${resource}`;
    this.counts.set(key, (this.counts.get(key) ?? 0) + 1);
  }

  /** Requests of `verb`, optionally for one `resource` only. */
  count(verb: ApiVerb, resource?: string): number {
    let total = 0;
    for (const [key, n] of this.counts) {
      const [v, r] = key.split(' ');
      if (v === verb && (resource === undefined || r === resource)) total += n;
    }
    return total;
  }

  /** A copy of every counter, keyed `"<verb> <resource>"`. */
  snapshot(): Record<string, number> {
    return Object.fromEntries([...this.counts].sort(([a], [b]) => a.localeCompare(b)));
  }

  /** Requests made since `earlier` (a {@link snapshot}), keyed as in snapshot(); zero entries omitted. */
  since(earlier: Readonly<Record<string, number>>): Record<string, number> {
    const delta: Record<string, number> = {};
    for (const [key, n] of Object.entries(this.snapshot())) {
      const d = n - (earlier[key] ?? 0);
      if (d !== 0) delta[key] = d;
    }
    return delta;
  }
}

/**
 * The verb and resource of a request, from its method and URL path
 * (`/api/v1/namespaces/ns/secrets/name` → get secrets). Undefined for paths we do not classify.
 */
export function classifyRequest(method: string, url: string): { verb: ApiVerb; resource: string } | undefined {
  const { pathname, searchParams } = new URL(url, 'https://placeholder');
  const parts = pathname.split('/').filter(Boolean);
  // /api/v1/... or /apis/<group>/<version>/...
  const rest = parts[0] === 'api' ? parts.slice(2) : parts[0] === 'apis' ? parts.slice(3) : undefined;
  if (!rest || rest.length === 0) return undefined;
  const scoped = rest[0] === 'namespaces' && rest.length >= 3 ? rest.slice(2) : rest;
  const [resource, name] = scoped;
  if (!resource) return undefined;
  switch (method.toUpperCase()) {
    case 'GET':
      if (searchParams.get('watch') === 'true') return { verb: 'watch', resource };
      return { verb: name === undefined ? 'list' : 'get', resource };
    case 'POST':
      return { verb: 'create', resource };
    case 'PUT':
      return { verb: 'update', resource };
    case 'PATCH':
      return { verb: 'patch', resource };
    case 'DELETE':
      return { verb: 'delete', resource };
    default:
      return undefined;
  }
}
