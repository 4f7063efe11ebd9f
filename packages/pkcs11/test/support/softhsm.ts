// A SoftHSM2 token per test, in a temporary folder: SOFTHSM2_CONF points the module at it.
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readdirSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { type Pkcs11CryptoBackend, type Pkcs11Options, createPkcs11CryptoBackend } from '../../src/index.js';

const ENSURE_SCRIPT = fileURLToPath(new URL('../../../../scripts/ensure-softhsm.sh', import.meta.url));
let modulePath: string | undefined;

/** The path of libsofthsm2.so, from scripts/ensure-softhsm.sh (which installs SoftHSM2 when missing); run once. */
export function softhsmModule(): string {
  modulePath ??= execFileSync('bash', [ENSURE_SCRIPT], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'inherit'] }).trim();
  return modulePath;
}

/** A freshly initialised token. */
export interface TestToken {
  readonly label: string;
  readonly pin: string;
  readonly modulePath: string;
  readonly dir: string;
  /**
   * A backend on this token, `pin` overriding the right one. Any earlier backend is closed first:
   * one per process, as in the controller (a PKCS#11 login holds for every session of a process).
   */
  backend(options?: { pin?: string; keepRetiredKeys?: boolean } & Pick<Pkcs11Options, 'reopenBackoff' | 'onRecovered'>): Pkcs11CryptoBackend;
  /** Moves the token's folder out of the token directory, as an operator's mistake would; returns what puts it back. */
  moveAway(): () => void;
  /** Deletes the objects with CKA_ID `id` from another process, as an operator with pkcs11-tool would. */
  deleteKeyElsewhere(id: Uint8Array): void;
  /** The private keys in the token (hex CKA_ID), read from another process. */
  privateKeysElsewhere(): string[];
  remove(): void;
}

/**
 * SoftHSM2 reads SOFTHSM2_CONF from the process's real environment at C_Initialize. Jest gives a
 * test a copy of process.env, so the variable is set once through process.loadEnvFile (which
 * writes the real one) to a file of this process that each test rewrites for its own folder.
 */
let sharedConf: string | undefined;
function softhsmConf(): string {
  if (sharedConf) return sharedConf;
  const conf = join(tmpdir(), `eso-mtls-softhsm2-${process.pid}.conf`);
  // An earlier test file in this worker process set it already (the real environment outlives a file).
  const set = process.env.SOFTHSM2_CONF;
  if (set !== undefined && set !== conf) throw new Error(`unset SOFTHSM2_CONF (${set}): the tests point SoftHSM2 at a temporary token folder of their own`);
  if (set === undefined) {
    const envFile = `${conf}.env`;
    writeFileSync(envFile, `SOFTHSM2_CONF=${conf}\n`);
    process.loadEnvFile(envFile);
    rmSync(envFile);
    process.env.SOFTHSM2_CONF = conf;
  }
  sharedConf = conf;
  return conf;
}

/** Initialises a token in a new temporary folder and points SoftHSM2 at it (this process and its children). */
export function createTestToken(label = 'eso-mtls-test'): TestToken {
  const module = softhsmModule();
  const dir = mkdtempSync(join(tmpdir(), 'eso-mtls-softhsm-'));
  writeFileSync(softhsmConf(), `directories.tokendir = ${dir}\nobjectstore.backend = file\nlog.level = ERROR\nslots.removable = false\n`);
  const pin = '123456';
  // scripts/ensure-softhsm.sh checked it is there (on PATH, or where ESO_MTLS_SOFTHSM2_UTIL says).
  execFileSync(process.env.ESO_MTLS_SOFTHSM2_UTIL || 'softhsm2-util', ['--init-token', '--free', '--label', label, '--so-pin', '654321', '--pin', pin], {
    stdio: 'pipe',
    env: process.env,
  });
  const opened: Pkcs11CryptoBackend[] = [];
  // Runs `body` in a separate Node process logged in to the token (session `s`, module `m`, pkcs11js `p`).
  const elsewhere = (body: string, args: readonly string[]): string => {
    const script = `
      const p = require('pkcs11js'); const m = new p.PKCS11(); m.load(process.argv[1]); m.C_Initialize();
      const slot = m.C_GetSlotList(true).find((x) => m.C_GetTokenInfo(x).label.trim() === process.argv[2]);
      const s = m.C_OpenSession(slot, p.CKF_SERIAL_SESSION | p.CKF_RW_SESSION); m.C_Login(s, p.CKU_USER, process.argv[3]);
      ${body}
      m.C_Logout(s); m.C_CloseSession(s); m.C_Finalize();`;
    return execFileSync(process.execPath, ['-e', script, module, label, pin, ...args], {
      cwd: fileURLToPath(new URL('.', import.meta.url)),
      env: process.env,
      encoding: 'utf8',
      stdio: ['ignore', 'pipe', 'pipe'],
    });
  };
  return {
    label,
    pin,
    modulePath: module,
    dir,
    backend: (options = {}) => {
      for (const b of opened.splice(0)) b.close();
      const backend = createPkcs11CryptoBackend({
        modulePath: module,
        tokenLabel: label,
        pin: () => options.pin ?? pin,
        keepRetiredKeys: options.keepRetiredKeys ?? false,
        ...(options.reopenBackoff ? { reopenBackoff: options.reopenBackoff } : {}),
        ...(options.onRecovered ? { onRecovered: options.onRecovered } : {}),
      });
      opened.push(backend);
      return backend;
    },
    deleteKeyElsewhere: (id) => {
      elsewhere(
        `m.C_FindObjectsInit(s, [{ type: p.CKA_ID, value: Buffer.from(process.argv[4], 'hex') }]);
        const found = m.C_FindObjects(s, 10); m.C_FindObjectsFinal(s);
        if (found.length === 0) throw new Error('no object to delete');
        for (const h of found) m.C_DestroyObject(s, h);`,
        [Buffer.from(id).toString('hex')],
      );
    },
    privateKeysElsewhere: () =>
      JSON.parse(
        elsewhere(
          `m.C_FindObjectsInit(s, [{ type: p.CKA_CLASS, value: p.CKO_PRIVATE_KEY }]);
          const found = m.C_FindObjects(s, 100); m.C_FindObjectsFinal(s);
          console.log(JSON.stringify(found.map((h) => m.C_GetAttributeValue(s, h, [{ type: p.CKA_ID }])[0].value.toString('hex')).sort()));`,
          [],
        ),
      ) as string[],
    moveAway: () => {
      // softhsm2-util made one folder per token (named by its serial) in the token directory.
      const [folder, ...more] = readdirSync(dir, { withFileTypes: true }).filter((e) => e.isDirectory());
      if (folder === undefined || more.length > 0) throw new Error(`expected one token folder in ${dir}`);
      const away = `${dir}-away`;
      renameSync(join(dir, folder.name), away);
      return () => renameSync(away, join(dir, folder.name));
    },
    remove: () => {
      for (const b of opened) b.close();
      rmSync(dir, { recursive: true, force: true });
      rmSync(`${dir}-away`, { recursive: true, force: true });
    },
  };
}
