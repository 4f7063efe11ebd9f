import { CertificateCache, MemoryStore, type SecretWrite, describeTarget } from '@eso-mtls/core';
import { createNodeCryptoBackend, createNodeVerifier } from '@eso-mtls/core/node';
import { forceSecretRotation, forceServiceRotation } from '../demo/forced-rotation.js';
import { KubeletVolume } from '../demo/kubelet-volume.js';
import { ReconcileLoop } from '../demo/reconcile-loop.js';
import { demoPolicy } from '../demo/schedule.js';
import { claimFolder } from './claim-folder.js';
import { type DevCertsLayout, type DevProvider, devCertsLayout } from './layout.js';
import { type LeafValidity, issuanceClockOffsetMs } from './validity.js';

/** Options of {@link runDevCerts}. */
export interface DevCertsOptions {
  readonly dir: string;
  readonly providers: readonly DevProvider[];
  /** Force a rotation this often; undefined writes once and keeps the folders as they are. */
  readonly rotateEveryMs?: number;
  /** Each forced rotation is an overlap CA rotation (which re-issues every leaf under the new CA). */
  readonly caRotation: boolean;
  /** Write the folders and resolve, instead of waiting for `signal`. */
  readonly once?: boolean;
  /** Issue the leaves valid now (the default), already expired, or not yet valid. */
  readonly validity?: LeafValidity;
  /** Stops the run (Ctrl-C); every folder is left whole. */
  readonly signal: AbortSignal;
  /** Progress lines, for people. */
  readonly out: { write(text: string): unknown };
  /** Told once the folders are written and the rotations scheduled. */
  readonly onReady?: (layout: DevCertsLayout) => void;
}

/**
 * Writes certificate folders for local development, kept by the demo's engine: the controller's
 * planner and executor over an in-memory cluster with the demo's short schedule (so an overlap CA
 * rotation takes seconds), forced rotations as `eso-mtls.io/rotate` annotations, and each Secret
 * laid out in its folder the way the kubelet writes a mounted Secret (`..data` swapped in one
 * rename). Resolves once `signal` aborts (or, with `once`, the folders are written) and the last
 * write has finished. A folder it cannot trust is refused untouched ({@link claimFolder}).
 */
export async function runDevCerts(options: DevCertsOptions): Promise<void> {
  const layout = devCertsLayout(options.dir, options.providers);
  const release = await claimFolder(layout);
  try {
    await keepFolders(options, layout);
  } finally {
    await release();
  }
}

/** Issues into the claimed folders and keeps them, rotating as asked, until told to stop. */
async function keepFolders(options: DevCertsOptions, layout: DevCertsLayout): Promise<void> {
  const policy = demoPolicy();
  const clockOffsetMs = issuanceClockOffsetMs(options.validity ?? 'current', policy);
  const store = new MemoryStore();
  const say = (line: string): void => void options.out.write(`${new Date().toISOString().slice(11, 19)} ${line}\n`);
  let live = false;
  // A first write that fails fails the run: there would be no folder to develop against.
  const mountFailures: Error[] = [];
  const onError = (e: Error): void => (live ? say(`write failed, the next change retries: ${e.message}`) : void mountFailures.push(e));
  // The folder is written as soon as the Secret changes: the schedule's propagation delay covers the reload.
  const volume = (directory: string): KubeletVolume => new KubeletVolume({ directory, deliveryDelay: () => 0, onError });
  const providerVolumes = layout.providers.map((p) => ({ ...p, volume: volume(p.directory) }));
  const client = volume(layout.client);
  const ca = volume(layout.ca);
  const all = [...providerVolumes.map((p) => p.volume), client, ca];

  const deliver = (w: SecretWrite): void => {
    const data = store.get(w.target)?.data;
    if (data === undefined || w.target === 'ca') return;
    const payload = folderPayload(data);
    const volumes =
      w.target === 'client'
        ? [client]
        : providerVolumes.filter((p) => p.provider.namespace === (w.target as { namespace: string }).namespace).map((p) => p.volume);
    for (const v of volumes) v.secretChanged(payload);
    // Every Secret carries the same bundle; the client's is the one the CA folder follows.
    if (w.target === 'client') ca.secretChanged({ 'ca.crt': payload['ca.crt']! });
  };
  const loop = new ReconcileLoop({
    store,
    policy,
    crypto: createNodeCryptoBackend(),
    cache: new CertificateCache(createNodeVerifier()),
    // Plans and certificates use this clock; a moved one issues leaves outside their validity now.
    now: () => Date.now() + clockOffsetMs,
    onError: (e) => say(`reconcile failed, retrying in 1s: ${e.message}`),
    onReconcile: (outcome) => {
      for (const w of outcome.written) {
        if (w.kind !== 'bundle')
          say(
            `${describeTarget(w.target)}: ${w.kind} written${w.reason ? ` (${w.reason})` : ''}${w.phases?.length ? `, CA phases ${w.phases.join(', ')}` : ''}`,
          );
        if (live) deliver(w);
      }
    },
  });

  let timer: NodeJS.Timeout | undefined;
  try {
    const namespaces = [...new Set(options.providers.map((p) => p.namespace))];
    for (const namespace of namespaces)
      store.setServices(
        namespace,
        options.providers.filter((p) => p.namespace === namespace).map((p) => ({ name: p.service })),
      );
    await loop.settle();
    for (const p of providerVolumes) await p.volume.mount(folderPayload(required(store, { namespace: p.provider.namespace })));
    const clientData = folderPayload(required(store, 'client'));
    await client.mount(clientData);
    await ca.mount({ 'ca.crt': clientData['ca.crt']! });
    if (mountFailures.length > 0) throw mountFailures[0]!;
    live = true;
    let tokens = 0;
    const rotate = (): void => {
      const token = `dev-certs-${++tokens}`;
      if (options.caRotation) forceSecretRotation(store, 'ca', token);
      else {
        for (const p of options.providers) forceServiceRotation(store, p.namespace, p.service, token);
        forceSecretRotation(store, 'client', token);
      }
      loop.poke();
    };
    if (options.rotateEveryMs !== undefined && !options.signal.aborted) timer = setInterval(rotate, options.rotateEveryMs);
    options.onReady?.(layout);
    await new Promise<void>((resolve) => {
      if (options.signal.aborted || options.once === true) resolve();
      options.signal.addEventListener('abort', () => resolve(), { once: true });
    });
  } finally {
    clearInterval(timer);
    await loop.stop();
    // Deliveries already asked for are written whole; none starts after this.
    for (const v of all) await v.resync();
    for (const v of all) await v.close();
  }
}

/** The files of a Secret's folder: the leaf, its key and the bundle. */
function folderPayload(data: Readonly<Record<string, unknown>>): Record<string, string> {
  const text = (v: unknown): string => (typeof v === 'string' ? v : v instanceof Uint8Array ? Buffer.from(v).toString('utf8') : '');
  return { 'tls.crt': text(data['tls.crt']), 'tls.key': text(data['tls.key']), 'ca.crt': text(data['ca.crt']) };
}

function required(store: MemoryStore, target: Parameters<MemoryStore['get']>[0]): Readonly<Record<string, unknown>> {
  const data = store.get(target)?.data;
  if (data === undefined) throw new Error(`the first reconcile wrote no Secret for ${describeTarget(target)}, so there is nothing to write`);
  return data;
}
