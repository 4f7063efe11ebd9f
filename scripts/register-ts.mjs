// Lets `node --import ./scripts/register-ts.mjs file.ts` run TypeScript sources directly
// (benchmarks and development runs); published packages run from their compiled dist/.
import { register } from 'node:module';

register('./ts-loader.mjs', import.meta.url);
