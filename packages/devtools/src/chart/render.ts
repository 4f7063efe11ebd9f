import { type Spec, View, parse } from 'vega';
import { compile } from 'vega-lite';
import type { TimelineModel } from './timeline-data.js';
import { timelineSpec } from './timeline-spec.js';

/**
 * The timeline as a headless Vega view, run and ready to render: Vega-Lite compiled to Vega, no
 * renderer, no browser. Tests read its scenegraph to count the marks.
 */
export async function timelineView(model: TimelineModel): Promise<View> {
  const view = new View(parse(compileTimeline(model).spec), { renderer: 'none' });
  await view.runAsync();
  return view;
}

/**
 * The timeline compiled to Vega, with what Vega-Lite warned about (a warning means the chart is not
 * what the spec says: the tests require none).
 */
export function compileTimeline(model: TimelineModel): { readonly spec: Spec; readonly warnings: readonly string[] } {
  const warnings: string[] = [];
  const logger = {
    level: (): number => 0,
    error: (...m: readonly unknown[]) => logger.warn(...m),
    warn(...m: readonly unknown[]) {
      warnings.push(m.map(String).join(' '));
      return logger;
    },
    info: () => logger,
    debug: () => logger,
  };
  const { spec } = compile(timelineSpec(model), { logger });
  return { spec, warnings };
}

/** The timeline as a standalone SVG document, rendered by Vega's headless SVG renderer. */
export async function renderTimelineSvg(model: TimelineModel): Promise<string> {
  const view = await timelineView(model);
  try {
    return await view.toSVG();
  } finally {
    view.finalize();
  }
}
