/**
 * How hard a fuzz property runs. `npm test` runs each property with its own short count, so the
 * suite stays quick; `npm run fuzz` sets FUZZ_RUNS to run every property that many times, and
 * FUZZ_SEED replays a run that fast-check reported (it prints the seed and the path on failure).
 */
export interface FuzzParameters {
  readonly numRuns: number;
  readonly seed?: number;
}

/** The fast-check parameters for a property whose `npm test` run makes `shortRuns` runs. */
export function fuzzParameters(shortRuns: number, env: NodeJS.ProcessEnv = process.env): FuzzParameters {
  const runs = positiveInteger(env['FUZZ_RUNS'], 'FUZZ_RUNS') ?? shortRuns;
  const seed = integer(env['FUZZ_SEED'], 'FUZZ_SEED');
  return seed === undefined ? { numRuns: runs } : { numRuns: runs, seed };
}

function positiveInteger(text: string | undefined, name: string): number | undefined {
  const n = integer(text, name);
  if (n !== undefined && n < 1) throw new Error(`${name} must be a positive integer, got ${JSON.stringify(text)}`);
  return n;
}

function integer(text: string | undefined, name: string): number | undefined {
  if (text === undefined || text === '') return undefined;
  if (!/^-?\d{1,10}$/.test(text)) throw new Error(`${name} must be an integer, got ${JSON.stringify(text)}`);
  return Number(text);
}
