import * as grpc from '@grpc/grpc-js';
import { SecretNotFoundError } from '../wire/errors.js';
import type * as m from '../wire/messages.js';
import { rawProviderClientConstructor, type ProviderMethodName, type RawProviderClient, type RequestOf, type ResponseOf } from '../wire/service.js';
import type { CertificateFailure } from '../tls/client-channel.js';
import { ProviderCallError } from './call-error.js';
import { CERTIFICATE_PROBLEM_STATUS, certificateError } from './certificate-errors.js';
import { isNameResolutionFailure, networkFailureDetails } from './network-failure.js';
import { REAL_RETRY_ENVIRONMENT, resolveRetryPolicy, withRetries, type RetryEnvironment, type RetryPolicy } from './retry.js';

/**
 * Where calls go: one channel, or a source that hands out the current channel per call (so a
 * channel replaced after a certificate rotation is picked up) and hears when each call ends.
 */
export type ProviderChannelSource =
  | grpc.Channel
  | {
      /** The channel a new call should use. */
      getChannel(): grpc.Channel;
      /** Told when a call that started on `channel` has finished, so a replaced channel can close once idle. */
      callFinished?(channel: grpc.Channel): void;
      /** Why calls on `channel` failed UNAVAILABLE, when it was the certificates (ProviderChannel: one diagnostic handshake). */
      explainFailure?(channel: grpc.Channel, timeoutMs: number): Promise<CertificateFailure | undefined>;
      /** Resolves true once new calls get a channel built from other material than `channel`'s, false after `waitMs`. */
      awaitNewMaterial?(channel: grpc.Channel, waitMs: number): Promise<boolean>;
    };

/** Options of {@link createSecretStoreProviderClient}. */
export interface ProviderClientOptions {
  /** Retry policy overrides, or false to never retry. Default: the contract's retryable codes, 5 attempts. */
  readonly retry?: Partial<RetryPolicy> | false;
  /** Deadline of a whole call, retries included; default 30 s. */
  readonly timeoutMs?: number;
  /** Deadline of one attempt; default timeoutMs. Shorter lets a stuck attempt be retried. */
  readonly attemptTimeoutMs?: number;
  /** Queue calls while the channel connects instead of failing fast; default false. */
  readonly waitForReady?: boolean;
  /** Clock, sleep and randomness of the retry loop (tests). */
  readonly retryEnvironment?: RetryEnvironment;
  /**
   * How long a call that failed on the CA, on validity or on the provider's refusal of the client
   * certificate waits for the client folder to reload before it fails with the named error; it is
   * retried only on reloaded material, never on the same. Default 0: fail at once unless the
   * material already changed (a rotation then heals on the next call). Bounded by the call's deadline.
   * A wrong server name is never retried.
   */
  readonly certificateReloadWaitMs?: number;
}

/** Per-call options of the typed methods. */
export interface ProviderCallOptions {
  readonly metadata?: grpc.Metadata;
  readonly timeoutMs?: number;
}

/** ESO's view of a provider: one typed async method per contract call. */
export interface SecretStoreProviderClient {
  /** The secret's value. Throws {@link SecretNotFoundError} when the provider answers NOT_FOUND. */
  getSecret(request: m.MessageInit<m.GetSecretRequest>, options?: ProviderCallOptions): Promise<Buffer>;
  /** The remote secret's keys and values. */
  getSecretMap(request: m.MessageInit<m.GetSecretMapRequest>, options?: ProviderCallOptions): Promise<Record<string, Buffer>>;
  /** Writes secret data to the remote store; resolves when the provider has written it. */
  pushSecret(request: m.MessageInit<m.PushSecretRequest>, options?: ProviderCallOptions): Promise<void>;
  /** Deletes a pushed remote secret. */
  deleteSecret(request: m.MessageInit<m.DeleteSecretRequest>, options?: ProviderCallOptions): Promise<void>;
  /** Whether the remote secret exists; a NOT_FOUND answer counts as false. */
  secretExists(request: m.MessageInit<m.SecretExistsRequest>, options?: ProviderCallOptions): Promise<boolean>;
  /** Every remote secret the request's `find` selects, by name. */
  getAllSecrets(request: m.MessageInit<m.GetAllSecretsRequest>, options?: ProviderCallOptions): Promise<Record<string, Buffer>>;
  /** The provider's verdict on the store's configuration. */
  validate(request: m.MessageInit<m.ValidateRequest>, options?: ProviderCallOptions): Promise<m.ValidateResponse>;
  /** What the store can do: READ_ONLY, WRITE_ONLY or READ_WRITE. */
  capabilities(request: m.MessageInit<m.CapabilitiesRequest>, options?: ProviderCallOptions): Promise<m.SecretStoreCapabilities>;
  /** Any method, returning the decoded response message as is. */
  call<M extends ProviderMethodName>(method: M, request: m.MessageInit<RequestOf<M>>, options?: ProviderCallOptions): Promise<ResponseOf<M>>;
  /**
   * The raw grpc-js client over the channel current now. Over a rotating channel source its calls
   * are not counted, so a channel replaced meanwhile may close under them: prefer the typed methods.
   */
  raw(): RawProviderClient;
}

/**
 * A typed provider client over `channel` (e.g. `new grpc.Channel(address, credentials, options)`
 * or a channel pool that swaps channels on rotation). Retries follow the contract: UNAVAILABLE,
 * DEADLINE_EXCEEDED, RESOURCE_EXHAUSTED and ABORTED with backoff, never NOT_FOUND,
 * INVALID_ARGUMENT, PERMISSION_DENIED or UNAUTHENTICATED. Over a `ProviderChannel`, a
 * handshake that fails on certificates is not retried as UNAVAILABLE: it throws a
 * `ProviderCertificateError` subclass (see {@link ProviderClientOptions.certificateReloadWaitMs}).
 */
export function createSecretStoreProviderClient(channel: ProviderChannelSource, options: ProviderClientOptions = {}): SecretStoreProviderClient {
  const policy = resolveRetryPolicy(options.retry);
  const env = options.retryEnvironment ?? REAL_RETRY_ENVIRONMENT;
  const timeoutMs = options.timeoutMs ?? 30_000;
  const attemptTimeoutMs = options.attemptTimeoutMs ?? timeoutMs;
  const waitForReady = options.waitForReady ?? false;
  const reloadWaitMs = options.certificateReloadWaitMs ?? 0;
  const clients = new WeakMap<grpc.Channel, RawProviderClient>();
  const Raw = rawProviderClientConstructor();
  const clientFor = (ch: grpc.Channel): RawProviderClient => {
    let c = clients.get(ch);
    // channelOverride makes grpc-js ignore the address and credentials arguments.
    if (c === undefined) clients.set(ch, (c = new Raw(ch.getTarget(), grpc.credentials.createSsl(), { channelOverride: ch })));
    return c;
  };
  const current = (): { ch: grpc.Channel; done: () => void } => {
    if (channel instanceof grpc.Channel) return { ch: channel, done: () => undefined };
    const ch = channel.getChannel();
    return { ch, done: () => channel.callFinished?.(ch) };
  };

  const attemptOnce = <M extends ProviderMethodName>(method: M, request: m.MessageInit<RequestOf<M>>, deadline: number, metadata: grpc.Metadata) =>
    attemptOn(current(), method, request, deadline, metadata);

  /**
   * An UNAVAILABLE that a diagnostic handshake traces to certificates becomes a certificate
   * failure: a wrong name is final; any other is retried at once if the material reloads within
   * the wait, and otherwise final too. Network failures stay UNAVAILABLE and are retried as before.
   */
  const diagnosed = async (error: grpc.ServiceError, ch: grpc.Channel, deadline: number): Promise<Error> => {
    if (channel instanceof grpc.Channel || channel.explainFailure === undefined || error.code !== grpc.status.UNAVAILABLE) return error;
    // A refused or unreachable address never got to TLS: no handshake to explain.
    const details = error.details ?? '';
    if (/ECONNREFUSED|ENOTFOUND|EAI_AGAIN|EHOSTUNREACH|ENETUNREACH/.test(details) || isNameResolutionFailure(details)) return error;
    const failure = await channel.explainFailure(ch, Math.max(0, deadline - Date.now()));
    if (failure === undefined) return error;
    const retryNow =
      failure.diagnosis.problem !== 'server_name' &&
      (await (channel.awaitNewMaterial?.(ch, Math.min(reloadWaitMs, Math.max(0, deadline - Date.now()))) ?? false));
    // Not UNAVAILABLE any more: the retry loop must not back off and try the same material again.
    const code = CERTIFICATE_PROBLEM_STATUS[failure.diagnosis.problem];
    return Object.assign(new Error(error.message, { cause: error }), { code, details: error.details, certificateFailure: failure, retryNow });
  };

  const attemptOn = <M extends ProviderMethodName>(
    { ch, done }: { ch: grpc.Channel; done: () => void },
    method: M,
    request: m.MessageInit<RequestOf<M>>,
    deadline: number,
    metadata: grpc.Metadata,
  ) =>
    new Promise<ResponseOf<M>>((resolve, reject) => {
      const client = clientFor(ch);
      type Unary = (req: unknown, md: grpc.Metadata, o: grpc.CallOptions, cb: (e: grpc.ServiceError | null, r?: unknown) => void) => void;
      try {
        (client[method] as unknown as Unary).call(client, request, metadata, { deadline, waitForReady }, (error, response) => {
          done();
          if (error) diagnosed(error, ch, deadline).then(reject, reject);
          else resolve(response as ResponseOf<M>);
        });
      } catch (e) {
        done(); // every getChannel() is matched by one callFinished(), or a replaced channel never closes
        reject(e);
      }
    });

  const call = async <M extends ProviderMethodName>(method: M, request: m.MessageInit<RequestOf<M>>, o: ProviderCallOptions = {}): Promise<ResponseOf<M>> => {
    const deadline = env.now() + (o.timeoutMs ?? timeoutMs);
    const metadata = o.metadata ?? new grpc.Metadata();
    try {
      // grpc-js deadlines are wall-clock; the retry loop's clock may be a test's fake one.
      const attempt = () => attemptOnce(method, request, Date.now() + Math.min(deadline - env.now(), attemptTimeoutMs), metadata);
      return await withRetries(attempt, policy, env, deadline);
    } catch (e) {
      const error = e as grpc.ServiceError & { attempts?: number; certificateFailure?: CertificateFailure };
      const failure = error.certificateFailure;
      if (failure !== undefined) throw certificateError(method, error.attempts ?? 1, failure, { cause: error.cause ?? error });
      if (error.code === grpc.status.NOT_FOUND) throw new SecretNotFoundError(error.details, { cause: error });
      const details = error.details ?? String(error.message);
      // grpc-js's own words for a network failure, made readable; a provider's details stay as it sent them.
      const shown = error.code === grpc.status.UNAVAILABLE ? networkFailureDetails(details) : details;
      throw new ProviderCallError(method, error.code ?? grpc.status.UNKNOWN, shown, error.attempts ?? 1, { cause: error });
    }
  };

  return {
    getSecret: async (r, o) => (await call('GetSecret', r, o)).value,
    getSecretMap: async (r, o) => (await call('GetSecretMap', r, o)).secrets,
    pushSecret: async (r, o) => void (await call('PushSecret', r, o)),
    deleteSecret: async (r, o) => void (await call('DeleteSecret', r, o)),
    secretExists: async (r, o) => {
      try {
        return (await call('SecretExists', r, o)).exists;
      } catch (e) {
        if (e instanceof SecretNotFoundError) return false;
        throw e;
      }
    },
    getAllSecrets: async (r, o) => (await call('GetAllSecrets', r, o)).secrets,
    validate: (r, o) => call('Validate', r, o),
    capabilities: async (r, o) => (await call('Capabilities', r, o)).capabilities,
    call,
    raw: () => {
      // Raw calls are not counted: over a rotating source, their channel may close under them.
      const { ch, done } = current();
      done();
      return clientFor(ch);
    },
  };
}
