import { type RequestOptions, request } from 'node:https';
import { ApiException, type KubeConfig } from '@kubernetes/client-node';

/** The HTTP status and message of an API call's answer (200 and '' when it succeeded). */
export interface Answer {
  readonly code: number;
  readonly message: string;
}

/** Awaits `call` and reports how the apiserver answered, instead of throwing on a refusal. */
export async function answer(call: Promise<unknown>): Promise<Answer> {
  try {
    await call;
    return { code: 200, message: '' };
  } catch (e) {
    if (!(e instanceof ApiException)) throw e;
    let message = String(e.body);
    try {
      message = (JSON.parse(String(e.body)) as { message: string }).message;
    } catch {
      // not JSON: keep the raw body
    }
    return { code: e.code, message };
  }
}

/** How long a new policy, binding or parameter may take to reach admission on a busy machine. */
const ADMISSION_SETTLE_MS = 30_000;

/**
 * Repeats `attempt` until the apiserver answers `code`: a new admission policy, binding or
 * parameter takes a moment to reach admission. `undo` removes what an attempt that succeeded too
 * early created. Throws with the last answer after ADMISSION_SETTLE_MS.
 */
export async function untilAnswer(
  what: string,
  attempt: () => Promise<unknown>,
  code: number,
  undo: () => Promise<unknown> = async () => undefined,
): Promise<Answer> {
  const deadline = Date.now() + ADMISSION_SETTLE_MS;
  let last = await answer(attempt());
  while (last.code !== code) {
    if (Date.now() > deadline) throw new Error(`${what}: still ${last.code} ${last.message} after ${ADMISSION_SETTLE_MS / 1000} s, expected ${code}`);
    if (last.code === 200) await undo().catch(() => undefined);
    await new Promise((r) => setTimeout(r, 250));
    last = await answer(attempt());
  }
  return last;
}

/**
 * One plain HTTPS request to the apiserver with `kc`'s credentials, for what client-node has no
 * method or parameter for (fieldValidation, an arbitrary subresource). The answer as {@link answer}
 * gives it: 200 and '' for any 2xx.
 */
export async function rawAnswer(kc: KubeConfig, method: string, path: string, body: unknown, contentType = 'application/json'): Promise<Answer> {
  const server = new URL(kc.getCurrentCluster()!.server);
  const options: RequestOptions = {
    hostname: server.hostname,
    port: server.port,
    method,
    path,
    headers: { 'Content-Type': contentType, Accept: 'application/json' },
  };
  await kc.applyToHTTPSOptions(options);
  return new Promise<Answer>((resolve, reject) => {
    const req = request(options, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => {
        const text = Buffer.concat(chunks).toString('utf8');
        const code = res.statusCode ?? 0;
        if (code >= 200 && code < 300) return resolve({ code: 200, message: '' });
        let message = text;
        try {
          message = (JSON.parse(text) as { message?: string }).message ?? text;
        } catch {
          // not JSON (a proxied backend's answer): keep the raw body
        }
        resolve({ code, message });
      });
    });
    req.on('error', reject);
    req.end(JSON.stringify(body));
  });
}
