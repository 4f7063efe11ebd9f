import { isIP } from 'node:net';

/** Where a server listens. `host` undefined means every interface, as Go's `:8080` does. */
export interface BindAddress {
  /** The host to bind; undefined for every interface. */
  readonly host: string | undefined;
  /** The TCP port. */
  readonly port: number;
}

/**
 * Parses a controller-runtime style bind address: `:8080`, `127.0.0.1:8080`, `[::1]:8080`,
 * `localhost:8080`, or `0` to disable the server (returned as `null`). Port 0 asks the OS for a
 * free port (tests use it). Returns undefined when `text` is none of these.
 */
export function parseBindAddress(text: string): BindAddress | null | undefined {
  if (text === '0') return null;
  const m = /^(?:\[([0-9a-fA-F:.]+)\]|([^:[\]]*)):(\d{1,5})$/.exec(text);
  if (!m) return undefined;
  const port = Number(m[3]);
  if (port > 65_535) return undefined;
  const host = m[1] ?? m[2] ?? '';
  if (m[1] !== undefined && isIP(host) !== 6) return undefined;
  if (host !== '' && m[1] === undefined && isIP(host) === 0 && !/^[a-zA-Z0-9]([-a-zA-Z0-9.]*[a-zA-Z0-9])?$/.test(host)) {
    return undefined;
  }
  return { host: host === '' ? undefined : host, port };
}

/** The address in the form {@link parseBindAddress} reads, for logs. */
export function formatBindAddress(address: BindAddress): string {
  const host = address.host === undefined ? '' : isIP(address.host) === 6 ? `[${address.host}]` : address.host;
  return `${host}:${address.port}`;
}
