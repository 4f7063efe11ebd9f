// Apart from helm.ts so that a plain Node process (a benchmark) can run helm: @jest/globals
// refuses to load outside jest.
import { expect } from '@jest/globals';
import { HelmError, type Values } from '@eso-mtls/test-kit/helm';

/** Expects `render` to refuse each of `refusals` with a HelmError whose stderr contains its message. */
export function expectRefusals(render: (values: Values) => unknown, refusals: readonly (readonly [Values, string])[]): void {
  for (const [values, message] of refusals) {
    let error: unknown;
    try {
      render(values);
    } catch (e) {
      error = e;
    }
    expect(error).toBeInstanceOf(HelmError);
    expect({ values, stderr: (error as HelmError).stderr }).toEqual({ values, stderr: expect.stringContaining(message) });
  }
}
