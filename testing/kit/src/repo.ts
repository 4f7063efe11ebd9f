import { resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

/** The repository root, for scripts, manifests and the shipped rules (no trailing slash). */
export const repoRoot = resolve(fileURLToPath(new URL('.', import.meta.url)), '..', '..', '..');
