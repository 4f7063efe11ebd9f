// The client folders a provider developer can get wrong (issue 33): each one ESO's certificate
// watcher must refuse, naming the reason, rather than wait in silence.
import { issueClientLeaf } from '@eso-mtls/core';
import { createNodeCryptoBackend } from '@eso-mtls/core/node';
import type { TlsMaterialProblem } from '@eso-mtls/grpc';
import { issueTestCa, issueTestClient, issueTestServer, TEST_POLICY } from './pki.js';

/** A bad client folder: the files to write in it (none: the folder does not exist) and the reason it is refused with. */
export interface BadClientFolder {
  readonly name: string;
  /** tls.crt, tls.key and ca.crt; undefined for a folder that does not exist. */
  readonly files: Readonly<Record<string, string>> | undefined;
  readonly reason: TlsMaterialProblem;
}

/** Another CA's ca.crt, a server certificate as the client certificate, an expired client certificate, and a missing folder. */
export async function badClientFolders(): Promise<BadClientFolder[]> {
  const ca = await issueTestCa();
  const other = await issueTestCa();
  const client = await issueTestClient(ca);
  const server = await issueTestServer(ca);
  // Issued as the controller would have a leaf's lifetime ago, and a day more.
  const past = Date.now() - TEST_POLICY.leafValidity - 86_400_000;
  const expired = await issueClientLeaf({ crypto: createNodeCryptoBackend(), policy: TEST_POLICY, now: past }, ca.keyed);
  const files = (bundle: string, cert: string, key: string) => ({ 'ca.crt': bundle, 'tls.crt': cert, 'tls.key': key });
  return [
    { name: "another CA's ca.crt", files: files(other.cert, client.cert, client.key), reason: 'untrusted' },
    { name: 'a server certificate as the client certificate', files: files(ca.cert, server.cert, server.key), reason: 'wrong_purpose' },
    { name: 'an expired client certificate', files: files(ca.cert, expired.certificate.pem, expired.privateKeyPem), reason: 'expired' },
    { name: 'a folder that does not exist', files: undefined, reason: 'not_found' },
  ];
}
