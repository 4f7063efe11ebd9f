import { extname } from 'node:path';

/** The chart file formats, by file extension. */
const FORMATS = ['.svg', '.html'] as const;

/**
 * What `--chart` accepts, for flag help and errors.
 * @internal Shared with \@eso-mtls/devtools; not part of the supported API.
 */
export const CHART_FILE_ACCEPTS = 'a file name ending in .svg or .html';

/**
 * Whether `--chart`'s value names a format the chart writer writes. Checked here, where the flags
 * are read, so a wrong name fails before a run, with or without @eso-mtls/devtools installed.
 * @internal Shared with \@eso-mtls/devtools; not part of the supported API.
 */
export function isChartFileName(file: string): boolean {
  return (FORMATS as readonly string[]).includes(extname(file).toLowerCase());
}
