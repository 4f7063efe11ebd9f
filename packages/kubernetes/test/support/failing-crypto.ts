import type { CryptoBackend } from '@eso-mtls/core';
import { createNodeCryptoBackend } from '@eso-mtls/core/node';

/**
 * node:crypto, except that signing fails for the namespaces in `failNamespaces` (their leaf's
 * to-be-signed bytes hold `.<namespace>.svc` in the subjectAltNames) and, while `failCa` is set,
 * for every CA (a self-signed CA's TBS holds its `eso-provider-ca-` name as issuer and subject).
 */
export class FailingCrypto implements CryptoBackend {
  readonly failNamespaces = new Set<string>();
  failCa = false;
  private readonly real = createNodeCryptoBackend();
  readonly verifier = this.real.verifier;
  readonly random = this.real.random;
  readonly signer = {
    generateKey: this.real.signer.generateKey.bind(this.real.signer),
    sign: async (privateKeyPem: string, data: Uint8Array): Promise<Uint8Array> => {
      const tbs = Buffer.from(data).toString('latin1');
      for (const ns of this.failNamespaces) {
        if (tbs.includes(`.${ns}.svc`)) throw new Error(`HSM refused to sign for ${ns} (test fault)`);
      }
      if (this.failCa && tbs.split('eso-provider-ca-').length > 2) throw new Error('HSM refused to sign a CA (test fault)');
      return this.real.signer.sign(privateKeyPem, data);
    },
  };
}
