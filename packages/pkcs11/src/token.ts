/**
 * One PKCS#11 token, found by its label (its sessions in {@link TokenSessions}), and the few
 * operations a CA needs (generate a key pair, read a public key, sign, list and destroy keys). Every failure becomes a
 * {@link CaKeyUnavailableError} that names the token and the Cryptoki return value; the sessions
 * are then closed and the module finalised and initialised again before the next use, with backoff
 * (see {@link ReopenBackoff}), so a token that came back is used again without a restart.
 */
import { createHash } from 'node:crypto';
import { endianness } from 'node:os';
import { CaKeyUnavailableError, ConcurrencyLimit, type KeyAlgorithm } from '@eso-mtls/core';
import type { Attribute, Handle, Pkcs11Module } from './binding.js';
import { type ReopenBackoffOptions, ReopenBackoff } from './reopen.js';
import { type Open, type SessionOptions, TokenSessions } from './session.js';
import { ecdsaDerSignature, p256Spki, rsaSpki } from './spki.js';

/** How to reach a token, and how to reopen it after a failure. */
export interface TokenOptions extends SessionOptions {
  /** Timing of the reopen after a failure (default: at once, then 1 s doubling to 5 s). */
  readonly reopenBackoff?: ReopenBackoffOptions;
  /** Told once when the token works again after a failure (for a log line). */
  readonly onRecovered?: () => void;
}

/** A key pair in the token: its CKA_ID and CKA_LABEL. */
export interface TokenKey {
  readonly id: Uint8Array;
  readonly label: string;
}

// DER OID of P-256 (prime256v1), the CKA_EC_PARAMS of a P-256 key.
const P256_PARAMS = Buffer.from('06082a8648ce3d030107', 'hex');
const MODULUS_BITS: Partial<Record<KeyAlgorithm, number>> = { 'RSA-2048': 2048, 'RSA-3072': 3072 };

/** A key the token does not hold, while the token itself answers: no reason to reopen it. */
class KeyNotInToken extends CaKeyUnavailableError {}

/** A token, opened on first use and reopened after a failure. */
export class Pkcs11Token {
  private readonly sessions: TokenSessions;
  private readonly serial = new ConcurrencyLimit(1);
  private readonly recovery: ReopenBackoff;
  /** Asynchronous operations under way (on libuv's threads): the module is not finalised under them. */
  private busy = 0;

  constructor(private readonly options: TokenOptions) {
    this.sessions = new TokenSessions(options);
    this.recovery = new ReopenBackoff(options.reopenBackoff);
  }

  /** The token's label. */
  get label(): string {
    return this.options.tokenLabel;
  }

  /** Generates a P-256 or RSA key pair that never leaves the token; returns its SubjectPublicKeyInfo. */
  generate(algorithm: KeyAlgorithm, key: TokenKey): Promise<Uint8Array> {
    return this.serial.run(() =>
      this.guard(`generating ${algorithm} key ${key.label}`, async (o, c) => {
        const common: Attribute[] = [
          { type: c.CKA_TOKEN!, value: true },
          { type: c.CKA_LABEL!, value: key.label },
          { type: c.CKA_ID!, value: Buffer.from(key.id) },
        ];
        const bits = MODULUS_BITS[algorithm];
        if (algorithm !== 'ECDSA-P256' && bits === undefined) throw new Error(`unsupported key algorithm ${JSON.stringify(algorithm)}`);
        const publicTemplate: Attribute[] = [
          ...common,
          { type: c.CKA_CLASS!, value: c.CKO_PUBLIC_KEY! },
          { type: c.CKA_PRIVATE!, value: false },
          { type: c.CKA_VERIFY!, value: true },
          ...(bits === undefined
            ? [{ type: c.CKA_EC_PARAMS!, value: P256_PARAMS }]
            : [
                { type: c.CKA_MODULUS_BITS!, value: bits },
                { type: c.CKA_PUBLIC_EXPONENT!, value: Buffer.from([1, 0, 1]) },
              ]),
        ];
        const privateTemplate: Attribute[] = [
          ...common,
          { type: c.CKA_CLASS!, value: c.CKO_PRIVATE_KEY! },
          { type: c.CKA_PRIVATE!, value: true },
          { type: c.CKA_SENSITIVE!, value: true },
          { type: c.CKA_EXTRACTABLE!, value: false },
          { type: c.CKA_SIGN!, value: true },
        ];
        const mechanism = { mechanism: bits === undefined ? c.CKM_EC_KEY_PAIR_GEN! : c.CKM_RSA_PKCS_KEY_PAIR_GEN! };
        const pair = await o.module.C_GenerateKeyPairAsync(o.work, mechanism, publicTemplate, privateTemplate);
        return this.spkiOf(o.module, o.work, pair.publicKey, c);
      }),
    );
  }

  /** SubjectPublicKeyInfo of the key pair `id`; throws {@link CaKeyUnavailableError} when the token does not hold it. */
  publicKey(id: Uint8Array): Uint8Array {
    return this.guardSync(`reading public key ${hex(id)}`, (o, c) => {
      const handle = this.find(o.module, o.lookup, c.CKO_PUBLIC_KEY!, id, c);
      if (handle === undefined) throw this.notFound(o, `token ${JSON.stringify(this.label)} holds no public key with id ${hex(id)}`);
      return this.spkiOf(o.module, o.lookup, handle, c);
    });
  }

  /** Signs `data` with the private key `id`: ECDSA or PKCS#1 v1.5, over SHA-256, as X.509 carries it. */
  sign(id: Uint8Array, data: Uint8Array): Promise<Uint8Array> {
    return this.serial.run(() =>
      this.guard(`signing with key ${hex(id)}`, async (o, c) => {
        const key = this.find(o.module, o.work, c.CKO_PRIVATE_KEY!, id, c);
        if (key === undefined) throw this.notFound(o, `token ${JSON.stringify(this.label)} holds no private key with id ${hex(id)}`);
        const [type] = o.module.C_GetAttributeValue(o.work, key, [{ type: c.CKA_KEY_TYPE! }]);
        const isEc = ulong(type?.value) === c.CKK_EC;
        if (isEc) {
          o.module.C_SignInit(o.work, { mechanism: c.CKM_ECDSA! }, key);
          const digest = createHash('sha256').update(data).digest();
          return ecdsaDerSignature(new Uint8Array(await o.module.C_SignAsync(o.work, digest, Buffer.alloc(132))));
        }
        o.module.C_SignInit(o.work, { mechanism: c.CKM_SHA256_RSA_PKCS! }, key);
        return new Uint8Array(await o.module.C_SignAsync(o.work, Buffer.from(data), Buffer.alloc(1024)));
      }),
    );
  }

  /** The private keys whose label starts with `prefix`. */
  keys(prefix: string): TokenKey[] {
    return this.guardSync('listing keys', (o, c) => {
      o.module.C_FindObjectsInit(o.lookup, [{ type: c.CKA_CLASS!, value: c.CKO_PRIVATE_KEY! }]);
      const handles: Handle[] = [];
      try {
        for (let batch = o.module.C_FindObjects(o.lookup, 64); batch.length > 0; batch = o.module.C_FindObjects(o.lookup, 64)) handles.push(...batch);
      } finally {
        o.module.C_FindObjectsFinal(o.lookup);
      }
      return handles
        .map((h) => {
          const [label, id] = o.module.C_GetAttributeValue(o.lookup, h, [{ type: c.CKA_LABEL! }, { type: c.CKA_ID! }]);
          return { label: label?.value?.toString('utf8') ?? '', id: new Uint8Array(id?.value ?? []) };
        })
        .filter((k) => k.label.startsWith(prefix));
    });
  }

  /** Destroys the key pair `id` (private and public objects). */
  destroy(id: Uint8Array): Promise<void> {
    return this.serial.run(() =>
      this.guard(`destroying key ${hex(id)}`, async (o, c) => {
        for (const cls of [c.CKO_PRIVATE_KEY!, c.CKO_PUBLIC_KEY!]) {
          const handle = this.find(o.module, o.work, cls, id, c);
          if (handle !== undefined) o.module.C_DestroyObject(o.work, handle);
        }
      }),
    );
  }

  /** Closes the sessions and finalises the module. */
  close(): void {
    this.sessions.close();
  }

  /**
   * A lookup found no such key. A token that went away can answer an open session's search with
   * nothing (SoftHSM2 does when its files are moved), so the token is asked first: if it no longer
   * answers, that failure is raised (and the token reopened); otherwise the key is missing.
   */
  private notFound(o: Open, message: string): Error {
    o.module.C_GetTokenInfo(o.slot);
    return new KeyNotInToken(message);
  }

  private find(module: Pkcs11Module, session: Handle, cls: number, id: Uint8Array, c: Readonly<Record<string, number>>): Handle | undefined {
    module.C_FindObjectsInit(session, [
      { type: c.CKA_CLASS!, value: cls },
      { type: c.CKA_ID!, value: Buffer.from(id) },
    ]);
    try {
      return module.C_FindObjects(session, 1)[0];
    } finally {
      module.C_FindObjectsFinal(session);
    }
  }

  private spkiOf(module: Pkcs11Module, session: Handle, handle: Handle, c: Readonly<Record<string, number>>): Uint8Array {
    const [type] = module.C_GetAttributeValue(session, handle, [{ type: c.CKA_KEY_TYPE! }]);
    if (ulong(type?.value) === c.CKK_EC) {
      const [point] = module.C_GetAttributeValue(session, handle, [{ type: c.CKA_EC_POINT! }]);
      return p256Spki(new Uint8Array(point!.value!));
    }
    const [n, e] = module.C_GetAttributeValue(session, handle, [{ type: c.CKA_MODULUS! }, { type: c.CKA_PUBLIC_EXPONENT! }]);
    return rsaSpki(new Uint8Array(n!.value!), new Uint8Array(e!.value!));
  }

  /** The open token; after a failure, reopened once the backoff allows (see {@link ReopenBackoff}). */
  private ensureOpen(): Open {
    const failure = this.recovery.failure;
    if (failure) {
      // Until the delay has run, fail at once without touching the token. Finalising under an
      // operation on libuv's threads would pull the module from under it: a later call reopens.
      if (!this.recovery.due() || this.busy > 0) throw failure;
      this.recovery.reopening();
      this.sessions.close();
    }
    return this.sessions.open();
  }

  private guardSync<T>(what: string, f: (o: Open, c: Readonly<Record<string, number>>) => T): T {
    try {
      const o = this.ensureOpen();
      return this.succeeded(f(o, this.sessions.constants));
    } catch (e) {
      throw this.failure(what, e);
    }
  }

  private async guard<T>(what: string, f: (o: Open, c: Readonly<Record<string, number>>) => Promise<T>): Promise<T> {
    try {
      const o = this.ensureOpen();
      this.busy++;
      try {
        return this.succeeded(await f(o, this.sessions.constants));
      } finally {
        this.busy--;
      }
    } catch (e) {
      throw this.failure(what, e);
    }
  }

  private succeeded<T>(result: T): T {
    if (this.recovery.succeeded()) this.options.onRecovered?.();
    return result;
  }

  /**
   * The error to raise: a missing key, or the failure a reopen waits on, as it is; any other
   * failure names the token, drops the sessions unless an operation still uses them, and has the
   * module reopened before the next use.
   */
  private failure(what: string, e: unknown): Error {
    const waitedOn = this.recovery.failure;
    if (e instanceof KeyNotInToken) return e;
    if (waitedOn !== undefined && e === waitedOn) return waitedOn;
    const error =
      e instanceof CaKeyUnavailableError
        ? e
        : new CaKeyUnavailableError(`PKCS#11 token ${JSON.stringify(this.label)}: ${what} failed: ${(e as Error)?.message ?? String(e)}`);
    if (this.busy === 0) this.sessions.drop();
    this.recovery.fail(error);
    return error;
  }
}

/** A CK_ULONG attribute as the module returns it: native byte order, 4 or 8 bytes. */
function ulong(b: Buffer | undefined): number | undefined {
  if (b === undefined || (b.length !== 4 && b.length !== 8)) return undefined;
  if (b.length === 4) return endianness() === 'LE' ? b.readUInt32LE() : b.readUInt32BE();
  return Number(endianness() === 'LE' ? b.readBigUInt64LE() : b.readBigUInt64BE());
}

const hex = (b: Uint8Array): string => Buffer.from(b).toString('hex');
