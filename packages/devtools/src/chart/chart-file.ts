import { writeFile } from 'node:fs/promises';
import { extname } from 'node:path';
import { CHART_FILE_ACCEPTS, isChartFileName } from '@eso-mtls/controller';
import { chartHtmlPage } from './html-page.js';
import { renderTimelineSvg } from './render.js';
import { type ChartInput, buildTimelineModel } from './timeline-data.js';

/** Draws the rotation timeline of a run and writes it to `file`: SVG, or an HTML page holding it. */
export async function writeTimelineChart(file: string, input: ChartInput): Promise<void> {
  if (!isChartFileName(file)) throw new Error(`--chart: ${JSON.stringify(file)} is not ${CHART_FILE_ACCEPTS}`);
  const svg = await renderTimelineSvg(buildTimelineModel(input));
  try {
    await writeFile(file, extname(file).toLowerCase() === '.html' ? chartHtmlPage(input.title, svg) : svg);
  } catch (e) {
    throw new Error(`--chart: cannot write ${JSON.stringify(file)}: ${(e as Error).message}; name a file in a folder that exists and that you may write to`, {
      cause: e,
    });
  }
}
