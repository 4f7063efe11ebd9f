import * as grpc from '@grpc/grpc-js';

/** A `grpc.health.v1` serving status. */
export type ServingStatus = 'UNKNOWN' | 'SERVING' | 'NOT_SERVING' | 'SERVICE_UNKNOWN';

interface Watcher {
  send(status: ServingStatus): void;
  end(): void;
}

/**
 * The standard `grpc.health.v1.Health` service: Check, List and Watch over a table of service
 * statuses. The empty name stands for the whole server.
 */
export class HealthService {
  private readonly statuses = new Map<string, ServingStatus>();
  private readonly watchers = new Map<string, Set<Watcher>>();

  constructor(services: readonly string[], initial: ServingStatus = 'NOT_SERVING') {
    for (const s of ['', ...services]) this.statuses.set(s, initial);
  }

  /** Sets the status of every known service (they live and die with the one server). */
  setAll(status: ServingStatus): void {
    for (const service of this.statuses.keys()) this.set(service, status);
  }

  /** Sets one service's status and tells its watchers when it changed. */
  set(service: string, status: ServingStatus): void {
    if (this.statuses.get(service) === status) return;
    this.statuses.set(service, status);
    for (const w of this.watchers.get(service) ?? []) w.send(status);
  }

  /** The status of `service`, undefined when it is unknown. */
  get(service: string): ServingStatus | undefined {
    return this.statuses.get(service);
  }

  /** grpc-js handlers for `server.addService(healthServiceDefinition(), ...)`. */
  handlers(): grpc.UntypedServiceImplementation {
    return {
      Check: (call: grpc.ServerUnaryCall<{ service: string }, unknown>, callback: grpc.sendUnaryData<unknown>) => {
        const status = this.statuses.get(call.request.service);
        if (status === undefined) callback({ code: grpc.status.NOT_FOUND, details: `unknown service ${JSON.stringify(call.request.service)}` });
        else callback(null, { status });
      },
      List: (_call: grpc.ServerUnaryCall<unknown, unknown>, callback: grpc.sendUnaryData<unknown>) => {
        const statuses = Object.fromEntries([...this.statuses].map(([service, status]) => [service, { status }]));
        callback(null, { statuses });
      },
      Watch: (call: grpc.ServerWritableStream<{ service: string }, unknown>) => {
        const service = call.request.service;
        const watcher: Watcher = { send: (status) => call.write({ status }), end: () => call.end() };
        watcher.send(this.statuses.get(service) ?? 'SERVICE_UNKNOWN');
        let set = this.watchers.get(service);
        if (set === undefined) this.watchers.set(service, (set = new Set()));
        set.add(watcher);
        const stop = (): void => {
          set.delete(watcher);
        };
        call.once('cancelled', stop);
        call.once('close', stop);
      },
    };
  }

  /** Ends every Watch stream, so a graceful shutdown is not held open by them. */
  endWatches(): void {
    for (const set of this.watchers.values()) for (const w of set) w.end();
    this.watchers.clear();
  }
}
