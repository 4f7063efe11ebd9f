import type { View } from 'vega';

/** A node of Vega's scenegraph: a mark (named, with items) or an item (a group item holds marks). */
interface SceneNode {
  readonly marktype?: string;
  readonly name?: string;
  readonly items?: readonly SceneNode[];
  readonly datum?: Record<string, unknown>;
}

/**
 * The data of every item Vega drew for the Vega-Lite layer `name` (compiled to the mark
 * `<name>_marks`): the chart's marks counted from its scenegraph, not from pixels.
 */
export function drawnData(view: View, name: string): Record<string, unknown>[] {
  const found: Record<string, unknown>[] = [];
  const visit = (node: SceneNode): void => {
    if (node.marktype !== undefined && node.name === `${name}_marks`) for (const item of node.items ?? []) found.push(item.datum ?? {});
    for (const child of node.items ?? []) visit(child);
  };
  visit((view.scenegraph() as unknown as { root: SceneNode }).root);
  return found;
}

/** How many of `data` have each value of `field`. */
export function countBy(data: readonly Record<string, unknown>[], field: string, weight?: string): Record<string, number> {
  const counts: Record<string, number> = {};
  for (const d of data) counts[String(d[field])] = (counts[String(d[field])] ?? 0) + (weight === undefined ? 1 : Number(d[weight]));
  return counts;
}
