/** `1 problem`, `2 problems`: a count with its noun in the number it agrees with. */
export function counted(n: number, singular: string, plural = `${singular}s`): string {
  return `${n} ${n === 1 ? singular : plural}`;
}
