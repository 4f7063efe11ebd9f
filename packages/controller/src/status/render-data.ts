import { stringify } from 'yaml';
import type { StatusReport } from './report.js';

/** Output formats of `eso-mtls status -o`. */
export const OUTPUT_FORMATS = ['text', 'json', 'yaml'] as const;
/** One of {@link OUTPUT_FORMATS}. */
export type OutputFormat = (typeof OUTPUT_FORMATS)[number];

/** The report as JSON (`-o json`): a stable shape scripts can read (docs/cli.md). */
export function renderJson(report: StatusReport): string {
  return `${JSON.stringify({ kind: 'EsoMtlsStatus', ...report }, null, 2)}\n`;
}

/** The same document as YAML (`-o yaml`). */
export function renderYaml(report: StatusReport): string {
  return stringify(JSON.parse(renderJson(report)), { lineWidth: 0 });
}
