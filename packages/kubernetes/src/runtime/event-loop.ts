/**
 * A loop over thousands of cached objects runs to its end before any I/O callback does: the probe
 * server's `/healthz` answer, a watch event, a Lease renewal. Such loops yield every
 * {@link ITEMS_PER_TURN} items ({@link nextTurn}), so a burst makes those late by one chunk of
 * work, not by the whole walk (issue 33: the kubelet restarted a controller busy with a burst).
 */

/** Items handled per turn of the event loop: about a millisecond of work, a few on a loaded machine. */
export const ITEMS_PER_TURN = 256;

/** Resolves on a later turn of the event loop, after the I/O callbacks waiting now have run. */
export function nextTurn(): Promise<void> {
  return new Promise((resolve) => setImmediate(resolve));
}
