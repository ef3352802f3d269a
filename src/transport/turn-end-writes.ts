/**
 * An answer whose bytes are ready but not yet handed to its socket or stream.
 */
export interface PendingAnswer {
  /** Hands the answer to node (headers, body, trailers). */
  send(): void;
  /** `send` threw: the answer ends as it can (its stream reset), and the error is reported. */
  sendFailed(error: unknown): void;
}

let pending: PendingAnswer[] = [];

/** Each answer alone: one that throws must not keep the rest of its turn's answers from leaving. */
function sendPending(): void {
  const batch = pending;
  pending = [];
  for (const answer of batch) {
    try {
      answer.send();
    } catch (error) {
      answer.sendFailed(error);
    }
  }
}

/**
 * Sends `answer` at the end of this turn of the event loop (its check phase), together with every
 * other answer decided in the same turn, rather than the moment its handler returns.
 *
 * Why: under load one turn reads many requests (tens under the bench's REST load). Written one
 * at a time between handlers, each answer's write(2) lands while its client sleeps, and waking it
 * is the dearest part of the write: on loopback, where a proxy or a sidecar often sits, the kernel
 * wakes the reader inside the writer's system call (an inter-processor interrupt, a VM exit on a
 * virtual machine). Written back to back, the first answer wakes the reader and the rest find it
 * awake; requests then come back in bunches, and the server's user time per request fell as well
 * as its kernel time. Redis writes its replies the same way, just before it waits for more events.
 * The figures: docs/performance.md#answers-written-at-the-turns-end.
 *
 * What it costs: an answer waits for the rest of its turn's handlers, a fraction of a millisecond
 * under load and nothing when idle (the check phase follows the poll that read the request).
 */
export function sendAtTurnEnd(answer: PendingAnswer): void {
  if (pending.push(answer) === 1) setImmediate(sendPending);
}
