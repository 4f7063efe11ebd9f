export * from './time.js';
export * from './names.js';
export * from './name-budget.js';
export * from './policy.js';
export * from './crypto.js';
export * from './certificate.js';
export { type PemBlock, PemError, decodePemBlocks, encodePem } from './pem.js';
export { sha256 } from './sha256.js';
export { CERTIFICATE_LABEL, CertificateParseError, bundlePem, parseCertificate, splitPemCertificates } from './parse.js';
export { OID_ECDSA_WITH_SHA256, OID_SHA256_WITH_RSA, keyIdentifier } from './tbs.js';
export * from './cache.js';
export * from './observe.js';
export * from './issue.js';
export {
  type WebCryptoAlgorithm,
  type WebCryptoLike,
  type WebCryptoKeyUsage,
  createWebCryptoSigner,
  ecdsaSignatureToDer,
  webCryptoRandom,
} from './webcrypto.js';
export * from './snapshot.js';
export * from './ledger.js';
export * from './rules.js';
export * from './ca-rotation.js';
export * from './ca-phases.js';
export * from './bundle.js';
export * from './plan.js';
export * from './execute.js';
export * from './seeded-random.js';
export * from './concurrency-limit.js';
export * from './memory-store.js';
export * from './invariants.js';
export * from './simulate.js';
