/**
 * The module and the token's sessions: load and initialise the module, find the token by its
 * label, open two sessions and log in; close them, and finalise the module so that the next open
 * initialises it anew (how a token that went away is seen again).
 */
import { CaKeyUnavailableError } from '@eso-mtls/core';
import { type Handle, type Pkcs11Binding, type Pkcs11Failure, type Pkcs11Module, loadBinding } from './binding.js';

/** How to reach a token. */
export interface SessionOptions {
  /** Path of the PKCS#11 module (.so) to load. */
  readonly modulePath: string;
  /** CKA_LABEL of the token (blank padding ignored). */
  readonly tokenLabel: string;
  /** The user PIN, read at each login so that a corrected PIN file is used without a restart. */
  readonly pin: () => string;
  /** The binding, loaded already (default: loaded at first use). */
  readonly binding?: Pkcs11Binding;
}

/** An open token: its module, slot and sessions. */
export interface Open {
  readonly module: Pkcs11Module;
  /** The token's slot, asked whether the token is still there when a key is not found. */
  readonly slot: Handle;
  /** For the synchronous lookups the planner makes while observing. */
  readonly lookup: Handle;
  /** For generation, signing and destruction, one operation at a time. */
  readonly work: Handle;
}

/** The sessions of one token, opened on demand. */
export class TokenSessions {
  private current?: Open;
  private binding?: Pkcs11Binding;
  private loaded?: Pkcs11Module;
  private initialized = false;
  /** A PIN the token refused, and why: never presented again, so retries cannot lock the token. */
  private refused?: { readonly pin: string; readonly why: string };

  constructor(private readonly options: SessionOptions) {
    this.binding = options.binding;
  }

  /** The Cryptoki constants; read after {@link open}. */
  get constants(): Readonly<Record<string, number>> {
    return this.binding!.constants;
  }

  /** The module initialised, the token's sessions open and logged in; opens what is not. */
  open(): Open {
    if (this.current) return this.current;
    this.binding ??= loadBinding();
    const c = this.binding.constants;
    if (!this.loaded) {
      const loaded = new this.binding.PKCS11();
      loaded.load(this.options.modulePath);
      this.loaded = loaded;
    }
    const module = this.loaded;
    if (!this.initialized) {
      try {
        // Async signing runs on libuv's threads while lookups run on the main one: the module must lock.
        module.C_Initialize({ flags: c.CKF_OS_LOCKING_OK! });
      } catch (e) {
        // Another user of the same module in this process initialised it first.
        if ((e as Pkcs11Failure).code !== c.CKR_CRYPTOKI_ALREADY_INITIALIZED) throw e;
      }
      this.initialized = true;
    }
    const label = this.options.tokenLabel;
    const slot = module.C_GetSlotList(true).find((s) => module.C_GetTokenInfo(s).label.trim() === label);
    if (slot === undefined) throw new CaKeyUnavailableError(`no token labelled ${JSON.stringify(label)} in PKCS#11 module ${this.options.modulePath}`);
    const flags = c.CKF_SERIAL_SESSION! | c.CKF_RW_SESSION!;
    const lookup = module.C_OpenSession(slot, flags);
    let work: Handle | undefined;
    try {
      work = module.C_OpenSession(slot, flags);
      this.login(module, lookup, c);
    } catch (e) {
      for (const s of [lookup, work]) if (s) closeQuietly(module, s);
      throw e;
    }
    this.current = { module, slot, lookup, work };
    return this.current;
  }

  /** Closes the sessions; the next {@link open} opens new ones. */
  drop(): void {
    const open = this.current;
    this.current = undefined;
    if (open) for (const s of [open.work, open.lookup]) closeQuietly(open.module, s);
  }

  /** Closes the sessions and finalises the module; the next {@link open} initialises it again. */
  close(): void {
    this.drop();
    if (this.initialized) {
      try {
        this.loaded?.C_Finalize();
      } catch {
        // already finalised
      }
      this.initialized = false;
    }
  }

  private login(module: Pkcs11Module, session: Handle, c: Readonly<Record<string, number>>): void {
    const pin = this.options.pin();
    const label = JSON.stringify(this.options.tokenLabel);
    if (pin === this.refused?.pin) {
      throw new CaKeyUnavailableError(`PKCS#11 token ${label} refused this PIN (${this.refused.why}); it is not presented again until the PIN read changes`);
    }
    try {
      module.C_Login(session, c.CKU_USER!, pin);
    } catch (e) {
      const code = (e as Pkcs11Failure).code;
      if (code === c.CKR_USER_ALREADY_LOGGED_IN) return;
      if (code === c.CKR_PIN_INCORRECT || code === c.CKR_PIN_LOCKED) this.refused = { pin, why: (e as Error).message };
      throw e;
    }
    this.refused = undefined;
  }
}

function closeQuietly(module: Pkcs11Module, session: Handle): void {
  try {
    module.C_CloseSession(session);
  } catch {
    // the session is gone already
  }
}
