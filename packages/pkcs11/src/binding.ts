/**
 * The part of pkcs11js (the PKCS#11 binding of PeculiarVentures, built with node-gyp on Node-API)
 * this package uses, and its loader. The binding is an optional dependency: a machine where it did
 * not build still installs and type-checks everything else, and only this package fails, saying why.
 */
import { createRequire } from 'node:module';

/** A PKCS#11 handle (slot, session or object), as pkcs11js passes it. */
export type Handle = Buffer;

/** One attribute of a template. */
export interface Attribute {
  readonly type: number;
  readonly value?: number | boolean | string | Buffer;
}

/** The PKCS11 class of pkcs11js: the calls this package makes. */
export interface Pkcs11Module {
  load(path: string): void;
  C_Initialize(options?: { readonly flags?: number }): void;
  C_Finalize(): void;
  C_GetSlotList(tokenPresent: boolean): Handle[];
  C_GetTokenInfo(slot: Handle): { readonly label: string };
  C_OpenSession(slot: Handle, flags: number): Handle;
  C_CloseSession(session: Handle): void;
  C_Login(session: Handle, userType: number, pin: string): void;
  C_FindObjectsInit(session: Handle, template: readonly Attribute[]): void;
  C_FindObjects(session: Handle, maxObjectCount: number): Handle[];
  C_FindObjectsFinal(session: Handle): void;
  C_GetAttributeValue(session: Handle, object: Handle, template: readonly Attribute[]): { type: number; value?: Buffer }[];
  C_DestroyObject(session: Handle, object: Handle): void;
  C_GenerateKeyPairAsync(
    session: Handle,
    mechanism: { mechanism: number },
    publicTemplate: readonly Attribute[],
    privateTemplate: readonly Attribute[],
  ): Promise<{ privateKey: Handle; publicKey: Handle }>;
  C_SignInit(session: Handle, mechanism: { mechanism: number }, key: Handle): void;
  C_SignAsync(session: Handle, data: Buffer, out: Buffer): Promise<Buffer>;
}

/** The module: the class and the Cryptoki constants (CKA_*, CKM_*, CKR_*, ...). */
export interface Pkcs11Binding {
  readonly PKCS11: new () => Pkcs11Module;
  readonly constants: Readonly<Record<string, number>>;
}

/** An error pkcs11js raises for a Cryptoki return value. */
export interface Pkcs11Failure extends Error {
  readonly code?: number;
}

/** Loads pkcs11js; throws an error that says how to get it when it is missing or did not build. */
export function loadBinding(): Pkcs11Binding {
  const require = createRequire(import.meta.url);
  let m: Record<string, unknown>;
  try {
    m = require('pkcs11js') as Record<string, unknown>;
  } catch (e) {
    throw new Error(
      `the PKCS#11 binding pkcs11js could not be loaded (${(e as Error).message.split('\n')[0]}): it is an optional dependency of ` +
        '@eso-mtls/pkcs11 built with node-gyp; install a C++ toolchain and Node headers, then run `npm install pkcs11js`',
      { cause: e },
    );
  }
  return { PKCS11: m.PKCS11 as Pkcs11Binding['PKCS11'], constants: m as unknown as Readonly<Record<string, number>> };
}
