import { describe, expect, it } from '@jest/globals';
import { formatDuration } from '../../src/index.js';

describe('formatDuration', () => {
  it.each([
    [35 * 86_400_000, '35d'],
    [36 * 3_600_000, '36h'],
    [10 * 60_000, '10m'],
    [90_000, '90s'],
    [1500, '1500ms'],
    [0, '0d'],
    [-5 * 60_000, '-5m'],
    [Infinity, 'Infinity'],
    [-Infinity, '-Infinity'],
    [NaN, 'NaN'],
  ])('%p → %s', (ms, text) => {
    expect(formatDuration(ms)).toBe(text);
  });
});
