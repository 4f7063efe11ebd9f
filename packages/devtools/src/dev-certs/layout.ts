import { join } from 'node:path';

/** One provider to issue for: its Service and namespace, as `--provider NAME[.NAMESPACE]` names them. */
export interface DevProvider {
  readonly service: string;
  readonly namespace: string;
}

/** The namespace of a `--provider` given without one: the namespace the docs deploy providers into. */
export const DEFAULT_PROVIDER_NAMESPACE = 'provider-system';

/** Where `eso-mtls dev-certs` writes each folder under its `--dir`. */
export interface DevCertsLayout {
  readonly dir: string;
  /** One folder per provider, `<service>.<namespace>`: what a pod of that Service mounts. */
  readonly providers: readonly { readonly provider: DevProvider; readonly directory: string }[];
  /** ESO core's client certificate folder. */
  readonly client: string;
  /** The trust bundle alone (`ca.crt`): what a ClusterTrustBundle projection would give. */
  readonly ca: string;
}

/** The marker a run leaves in `--dir`, so that a later run knows the folder is its own to rewrite. */
export const MARKER_FILE = '.eso-mtls-dev-certs';

/** The files of a provider's and of ESO's client folder, as in the Secrets they mirror. */
export const LEAF_FILES: readonly string[] = ['tls.crt', 'tls.key', 'ca.crt'];
/** The file of the CA folder. */
export const BUNDLE_FILES: readonly string[] = ['ca.crt'];

/** The folders of a run over `dir`. Pure. */
export function devCertsLayout(dir: string, providers: readonly DevProvider[]): DevCertsLayout {
  return {
    dir,
    providers: providers.map((provider) => ({ provider, directory: join(dir, providerFolderName(provider)) })),
    client: join(dir, 'eso-client'),
    ca: join(dir, 'ca'),
  };
}

/** `<service>.<namespace>`: the folder's name is the server name less `.svc`. */
export function providerFolderName(p: DevProvider): string {
  return `${p.service}.${p.namespace}`;
}
