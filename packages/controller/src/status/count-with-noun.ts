// Both the evaluation's messages and the text rendering word counts, and neither should import the other.

/** `1 problem`, `2 problems`: a count with its noun in the number it agrees with. */
export function countWithNoun(n: number, singular: string, plural = `${singular}s`): string {
  return `${n} ${n === 1 ? singular : plural}`;
}
