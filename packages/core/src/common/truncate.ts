/**
 * Values as messages show them. A certificate's names and a Secret's values and annotations can be
 * as large as the object holding them, and tenants write some of them: a message quotes them in
 * part, so Events, logs and status stay small whatever a Secret holds.
 */

/** `text`, cut to `max` characters ending in `...` when longer. */
export function truncate(text: string, max = 128): string {
  return text.length > max ? `${text.slice(0, max - 3)}...` : text;
}

/** The first `count` of `items`, each cut by {@link truncate}, comma-separated, then how many more. */
export function truncateList(items: readonly string[], count = 5): string {
  const head = items
    .slice(0, count)
    .map((item) => truncate(item))
    .join(', ');
  return items.length > count ? `${head} and ${items.length - count} more` : head;
}
