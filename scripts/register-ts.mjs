// Lets `node --import ./scripts/register-ts.mjs file.ts` run TypeScript sources directly
// (benchmarks and development runs); published packages run from their compiled dist/.
// In-thread hooks (module.registerHooks, Node 22.15+) where Node has them: Node 26 deprecates
// module.register() with a warning on stderr. Node 20 has only module.register().
import * as nodeModule from 'node:module';
import { load, resolve } from './ts-loader.mjs';

if (typeof nodeModule.registerHooks === 'function') nodeModule.registerHooks({ resolve, load });
else nodeModule.register('./ts-loader.mjs', import.meta.url);
