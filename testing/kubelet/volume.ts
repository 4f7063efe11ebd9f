// One pod's projected volume of pod certificates, kept on disk the kubelet's way: the credential
// bundle and the trust anchors are written together, and every write is one `..data` swap.
import { mkdir } from 'node:fs/promises';
import type { V1Pod, V1VolumeProjection } from '@kubernetes/client-node';
import { type AtomicWrite, writeAtomically } from '@eso-mtls/test-kit/demo';
import type { KubeletPod, PodCertificateKubelet } from './kubelet.js';
import type { KubeletKey, KubeletKeyType } from './keys.js';
import type { IssuedOutcome, RequestOutcome } from './outcome.js';
import { cleanCertificateChain, credentialBundle, trustAnchors } from './pem-files.js';

/** The credentials a volume holds: the kubelet's key and the signer's answer for it. */
export interface HeldCredentials {
  readonly key: KubeletKey;
  readonly issued: IssuedOutcome;
}

/**
 * The projected volume of one pod in `directory`. Its sources come from the pod's spec: a
 * `podCertificate` source's `credentialBundlePath` (or `keyPath` and `certificateChainPath`), and
 * each `clusterTrustBundle` source's `path`, listed anew at every write. Nothing is written until
 * a certificate is issued; a refused refresh leaves the folder as it was.
 */
export class PodCertificateVolume {
  private held: HeldCredentials | undefined;
  private readonly sources: readonly V1VolumeProjection[];

  /**
   * @param kubelet - The pod's node, which makes the requests and lists the trust bundles.
   * @param pod - The pod, as {@link PodCertificateKubelet.runPod} returned it.
   * @param directory - The folder to keep (created if missing).
   * @param volumeName - Which projected volume of the pod (default: the first with a podCertificate source).
   */
  constructor(
    private readonly kubelet: PodCertificateKubelet,
    private readonly pod: KubeletPod,
    readonly directory: string,
    volumeName?: string,
  ) {
    this.sources = projectedSources(pod.pod, volumeName);
  }

  /** The credentials on disk now, if any. */
  get credentials(): HeldCredentials | undefined {
    return this.held;
  }

  /** First issuance, as at pod start: request, wait, and on Issued write the folder. */
  async mount(): Promise<RequestOutcome> {
    return this.issue();
  }

  /**
   * The kubelet's refresh: once `now` has reached the held certificate's beginRefreshAt, a new key
   * and request; on Issued the folder is rewritten. Undefined (and nothing asked) before that, or
   * when nothing was issued yet.
   */
  async refreshIfDue(now: Date): Promise<RequestOutcome | undefined> {
    if (this.held === undefined || now < this.held.issued.beginRefreshAt) return undefined;
    return this.issue();
  }

  /** Writes the folder again with the held credentials and the trust bundles as listed now (the kubelet's periodic resync). */
  async resync(): Promise<AtomicWrite> {
    if (this.held === undefined) throw new Error(`nothing was issued for ${this.directory} yet; call mount() first`);
    return this.write(this.held);
  }

  private async issue(): Promise<RequestOutcome> {
    const source = this.sources.find((s) => s.podCertificate)!.podCertificate!;
    const request = await this.kubelet.requestCertificate(this.pod, {
      signerName: source.signerName,
      keyType: source.keyType as KubeletKeyType,
      maxExpirationSeconds: source.maxExpirationSeconds,
    });
    const outcome = await this.kubelet.waitForOutcome(request);
    if (outcome.condition === 'Issued') {
      const held = { key: request.key, issued: outcome };
      await this.write(held);
      this.held = held;
    }
    return outcome;
  }

  private async write({ key, issued }: HeldCredentials): Promise<AtomicWrite> {
    const payload: Record<string, string> = {};
    for (const source of this.sources) {
      const certificate = source.podCertificate;
      if (certificate?.credentialBundlePath) payload[certificate.credentialBundlePath] = credentialBundle(key.pkcs8Pem, issued.certificateChain);
      if (certificate?.keyPath) payload[certificate.keyPath] = key.pkcs8Pem;
      if (certificate?.certificateChainPath) payload[certificate.certificateChainPath] = cleanCertificateChain(issued.certificateChain);
      const trust = source.clusterTrustBundle;
      if (trust) {
        if (trust.signerName === undefined)
          throw new Error(`clusterTrustBundle source ${trust.path} names a bundle; only signerName + labelSelector is supported here`);
        const bundles = await this.kubelet.trustBundles(trust.signerName, trust.labelSelector);
        if (bundles.length === 0 && !trust.optional) {
          throw new Error(
            `clusterTrustBundle source ${trust.path}: signer ${trust.signerName} and its labelSelector matched zero ClusterTrustBundles (the kubelet fails the volume)`,
          );
        }
        payload[trust.path] = trustAnchors(bundles.map((b) => b.spec.trustBundle));
      }
    }
    await mkdir(this.directory, { recursive: true });
    return writeAtomically(this.directory, payload);
  }
}

function projectedSources(pod: V1Pod, volumeName: string | undefined): readonly V1VolumeProjection[] {
  const volume = pod.spec?.volumes?.find((v) => (volumeName === undefined ? v.projected?.sources?.some((s) => s.podCertificate) : v.name === volumeName));
  if (volume?.projected?.sources?.some((s) => s.podCertificate) !== true) {
    throw new Error(`pod ${pod.metadata?.namespace}/${pod.metadata?.name} has no projected volume ${volumeName ?? ''} with a podCertificate source`);
  }
  return volume.projected.sources!;
}
