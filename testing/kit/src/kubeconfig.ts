import { writeFileSync } from 'node:fs';
import { stringify } from 'yaml';

/** A named entry of a kubeconfig list: a cluster's or a user's fields under its name. */
export interface Named {
  readonly name: string;
  readonly fields: Record<string, unknown>;
}

/** Writes at `path` a kubeconfig whose one context, `c`, joins `cluster` and `user` (if any), plus `extra` top-level keys; returns `path`. */
export function writeKubeconfig(path: string, cluster: Named, user?: Named, extra: Record<string, unknown> = {}): string {
  writeFileSync(
    path,
    stringify({
      apiVersion: 'v1',
      kind: 'Config',
      'current-context': 'c',
      contexts: [{ name: 'c', context: user ? { cluster: cluster.name, user: user.name } : { cluster: cluster.name } }],
      clusters: [{ name: cluster.name, cluster: cluster.fields }],
      ...(user ? { users: [{ name: user.name, user: user.fields }] } : {}),
      ...extra,
    }),
  );
  return path;
}
