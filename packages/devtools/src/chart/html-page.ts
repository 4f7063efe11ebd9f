/** Escapes text for an HTML element or attribute. */
const escapeHtml = (text: string): string => text.replace(/[&<>"']/g, (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' })[c]!);

/**
 * A self-contained HTML page around an SVG chart: the SVG inline, no script, no stylesheet or font
 * fetched, so it opens offline and from a CI artifact.
 */
export function chartHtmlPage(title: string, svg: string): string {
  return [
    '<!DOCTYPE html>',
    '<html lang="en">',
    '<head>',
    '<meta charset="utf-8">',
    `<title>${escapeHtml(title)}</title>`,
    '<style>body { margin: 16px; background: white; font-family: sans-serif; } svg { max-width: 100%; height: auto; }</style>',
    '</head>',
    '<body>',
    svg,
    '</body>',
    '</html>',
    '',
  ].join('\n');
}
