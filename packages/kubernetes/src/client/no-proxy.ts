import { BlockList, isIP } from 'node:net';
import { domainToASCII } from 'node:url';

/**
 * The proxy settings of the environment, as Go's http.ProxyFromEnvironment reads them (client-go's
 * default when a kubeconfig has no proxy-url): the upper-case name wins when both are set and non-empty.
 */
export interface ProxyEnvironment {
  readonly httpsProxy?: { readonly variable: string; readonly value: string };
  readonly httpProxy?: { readonly variable: string; readonly value: string };
  readonly noProxy: string;
}

type Env = Readonly<Record<string, string | undefined>>;

/** Reads HTTPS_PROXY, HTTP_PROXY and NO_PROXY (or their lower-case forms) from `env`. */
export function readProxyEnvironment(env: Env): ProxyEnvironment {
  const first = (...names: string[]): { variable: string; value: string } | undefined => {
    for (const variable of names) {
      const value = env[variable];
      if (value) return { variable, value };
    }
    return undefined;
  };
  return {
    httpsProxy: first('HTTPS_PROXY', 'https_proxy'),
    httpProxy: first('HTTP_PROXY', 'http_proxy'),
    noProxy: first('NO_PROXY', 'no_proxy')?.value ?? '',
  };
}

/**
 * The environment's proxy for `target` (its raw value and the variable it came from), or undefined
 * for a direct connection. Go's rules (golang.org/x/net/http/httpproxy): HTTPS_PROXY for https
 * URLs, HTTP_PROXY for http; never a proxy for `localhost` or a loopback IP; none when NO_PROXY
 * matches. The value is not validated here.
 */
export function proxyFromEnvironment(target: URL, environment: ProxyEnvironment): { readonly variable: string; readonly value: string } | undefined {
  const chosen = target.protocol === 'https:' ? environment.httpsProxy : target.protocol === 'http:' ? environment.httpProxy : undefined;
  if (!chosen) return undefined;
  const host = target.hostname.replace(/^\[(.*)\]$/, '$1');
  const port = target.port || (target.protocol === 'https:' ? '443' : '80');
  return usesProxy(host, port, environment.noProxy) ? chosen : undefined;
}

const LOOPBACK = new BlockList();
LOOPBACK.addSubnet('127.0.0.0', 8, 'ipv4');
LOOPBACK.addAddress('::1', 'ipv6');

/** One NO_PROXY entry: does it exempt this host (lower-case, IPv6 without brackets) and port? */
type Matcher = (host: string, port: string, ipFamily: 0 | 4 | 6) => boolean;

/**
 * Whether a request to host:port goes through the proxy, by Go's httpproxy useProxy: loopback
 * and `localhost` never do (Go hard-codes it, so a local apiserver is never proxied from the
 * environment); otherwise any NO_PROXY entry that matches keeps it direct.
 */
export function usesProxy(host: string, port: string, noProxy: string): boolean {
  const name = host.trim().toLowerCase();
  if (name === 'localhost') return false;
  const family = isIP(name) as 0 | 4 | 6;
  if (family !== 0 && LOOPBACK.check(name, family === 4 ? 'ipv4' : 'ipv6')) return false;
  return !parseNoProxy(noProxy).some((matches) => matches(name, port, family));
}

/**
 * NO_PROXY as Go parses it: comma-separated; `*` alone matches everything; an IP or CIDR matches
 * addresses (an IP may carry `:port` or `[v6]:port`); a domain matches itself and its subdomains,
 * `.domain` and `*.domain` only subdomains, and a domain may carry `:port`. Domains never match an
 * IP. Malformed entries are skipped, as Go does.
 */
export function parseNoProxy(noProxy: string): Matcher[] {
  const matchers: Matcher[] = [];
  for (const raw of noProxy.split(',')) {
    const entry = raw.trim().toLowerCase();
    if (entry === '') continue;
    if (entry === '*') return [() => true];
    const cidr = cidrMatcher(entry);
    if (cidr) {
      matchers.push(cidr);
      continue;
    }
    const [host, entryPort] = splitHostPort(entry) ?? [entry, ''];
    const family = isIP(host);
    if (family !== 0) {
      const one = new BlockList();
      one.addAddress(host, family === 4 ? 'ipv4' : 'ipv6');
      matchers.push(
        (target, port, ipFamily) => ipFamily !== 0 && one.check(target, ipFamily === 4 ? 'ipv4' : 'ipv6') && (entryPort === '' || entryPort === port),
      );
      continue;
    }
    if (host === '') continue;
    matchers.push(domainMatcher(host, entryPort));
  }
  return matchers;
}

function cidrMatcher(entry: string): Matcher | undefined {
  const slash = entry.indexOf('/');
  if (slash < 0) return undefined;
  const address = entry.slice(0, slash);
  const bits = entry.slice(slash + 1);
  const family = isIP(address);
  if (family === 0 || !/^\d{1,3}$/.test(bits) || Number(bits) > (family === 4 ? 32 : 128)) return undefined;
  const list = new BlockList();
  list.addSubnet(address, Number(bits), family === 4 ? 'ipv4' : 'ipv6');
  return (host, _port, ipFamily) => ipFamily !== 0 && list.check(host, ipFamily === 4 ? 'ipv4' : 'ipv6');
}

function domainMatcher(host: string, entryPort: string): Matcher {
  const name = host.startsWith('*.') ? host.slice(1) : host;
  // `example.com` matches the name itself too; `.example.com` only names below it.
  const matchesItself = !name.startsWith('.');
  const suffix = toAscii(matchesItself ? `.${name}` : name);
  return (target, port, ipFamily) =>
    ipFamily === 0 && (target.endsWith(suffix) || (matchesItself && target === suffix.slice(1))) && (entryPort === '' || entryPort === port);
}

/** Go's net.SplitHostPort: `host:port` or `[v6]:port`; undefined for a bare host (or a bare IPv6 address). */
function splitHostPort(entry: string): [string, string] | undefined {
  if (entry.startsWith('[')) {
    const close = entry.indexOf(']');
    if (close < 0 || entry[close + 1] !== ':') return undefined;
    return [entry.slice(1, close), entry.slice(close + 2)];
  }
  const colon = entry.indexOf(':');
  if (colon < 0 || entry.indexOf(':', colon + 1) >= 0) return undefined;
  return [entry.slice(0, colon), entry.slice(colon + 1)];
}

/** Go compares names in their IDNA ASCII form; URL hostnames are already in it. */
function toAscii(name: string): string {
  if ([...name].every((c) => c.charCodeAt(0) < 0x80)) return name;
  const ascii = domainToASCII(name.replace(/^\./, ''));
  return ascii === '' ? name : name.startsWith('.') ? `.${ascii}` : ascii;
}
