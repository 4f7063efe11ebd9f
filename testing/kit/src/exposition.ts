// Reads the Prometheus text exposition format back into samples, so tests assert on what a
// scraper would actually receive over HTTP.
import { request } from 'node:http';

export interface Sample {
  readonly name: string;
  readonly labels: Readonly<Record<string, string>>;
  readonly value: number;
}

export interface Scrape {
  readonly status: number;
  readonly contentType: string | undefined;
  readonly body: string;
  readonly samples: readonly Sample[];
}

/** One real HTTP request; `Connection: close` so no socket outlives the test. */
export function httpRequest(url: string, method = 'GET'): Promise<{ status: number; headers: Record<string, string | string[] | undefined>; body: string }> {
  return new Promise((resolve, reject) => {
    const req = request(url, { method, headers: { Connection: 'close' } }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body: Buffer.concat(chunks).toString('utf8') }));
      res.on('error', reject);
    });
    req.on('error', reject);
    req.end();
  });
}

export async function scrape(url: string): Promise<Scrape> {
  const res = await httpRequest(url);
  const contentType = res.headers['content-type'];
  return {
    status: res.status,
    contentType: Array.isArray(contentType) ? contentType[0] : contentType,
    body: res.body,
    samples: res.status === 200 ? parseExposition(res.body) : [],
  };
}

const SAMPLE = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})?\s+(\S+)(?:\s+\d+)?$/;
const LABEL = /([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"\s*,?/gy;

export function parseExposition(text: string): Sample[] {
  const samples: Sample[] = [];
  for (const line of text.split('\n')) {
    if (line.trim() === '' || line.startsWith('#')) continue;
    const m = SAMPLE.exec(line);
    if (!m) throw new Error(`not an exposition sample line: ${JSON.stringify(line)}`);
    const labels: Record<string, string> = {};
    const body = m[2] ?? '';
    LABEL.lastIndex = 0;
    let l: RegExpExecArray | null;
    while (LABEL.lastIndex < body.length && (l = LABEL.exec(body)) !== null) {
      labels[l[1]!] = l[2]!.replace(/\\(.)/g, (_, c: string) => (c === 'n' ? '\n' : c));
    }
    if (LABEL.lastIndex !== body.length && body.length > 0) throw new Error(`bad label set in ${JSON.stringify(line)}`);
    samples.push({ name: m[1]!, labels, value: Number(m[3]) });
  }
  return samples;
}

/** The samples of one metric, optionally only those whose labels include `labels`. */
export function series(samples: readonly Sample[], name: string, labels: Record<string, string> = {}): Sample[] {
  return samples.filter((s) => s.name === name && Object.entries(labels).every(([k, v]) => s.labels[k] === v));
}

/** The value of exactly one matching sample; throws if there are none or several. */
export function valueOf(samples: readonly Sample[], name: string, labels: Record<string, string> = {}): number {
  const found = series(samples, name, labels);
  if (found.length !== 1) throw new Error(`expected one ${name}${JSON.stringify(labels)} sample, found ${found.length}`);
  return found[0]!.value;
}
