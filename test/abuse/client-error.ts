import { expect } from "vitest";
import { registryClient, type Protocol } from "../support/protocol-clients.js";

/**
 * The abuse suite's one rule: client input is answered as the client's fault, never as the
 * server's. Every case of test/abuse/ checks its answer with `expectClientError`, whatever the
 * protocol carried it, so "zero 5xx from client input" means the same thing everywhere.
 */

/** An answer as the cases see it: a Connect code name ("ok" on success), and the HTTP status where it carries the outcome. */
export interface Outcome {
  readonly code: string;
  /**
   * The HTTP status, for protocols whose status says how the call went (REST, Connect, and any
   * answer that is no RPC answer at all). Undefined when the outcome travels as grpc-status.
   */
  readonly httpStatus?: number;
  readonly message?: string;
}

/** Codes that say the server failed: client input must never produce one. */
const SERVER_FAULTS = new Set(["internal", "unknown", "unavailable", "deadline_exceeded", "data_loss"]);

const CODES = new Set([
  "canceled",
  "unknown",
  "invalid_argument",
  "deadline_exceeded",
  "not_found",
  "already_exists",
  "permission_denied",
  "resource_exhausted",
  "failed_precondition",
  "aborted",
  "out_of_range",
  "unimplemented",
  "internal",
  "unavailable",
  "data_loss",
  "unauthenticated",
]);

function describeOutcome(outcome: Outcome): string {
  return `${outcome.code}${outcome.httpStatus === undefined ? "" : ` (HTTP ${outcome.httpStatus})`}: ${outcome.message ?? ""}`;
}

/**
 * Asserts a refusal that blames the client: a Connect code that is no server fault (or, for an
 * answer that is plain HTTP, a 4xx status), and no 5xx status. `expected` narrows it to the
 * code(s) the contract names for the case.
 */
export function expectClientError(outcome: Outcome, expected?: string | readonly string[]): void {
  const said = describeOutcome(outcome);
  expect(outcome.code, `refused, not accepted: ${said}`).not.toBe("ok");
  expect(SERVER_FAULTS.has(outcome.code), `a server fault answered client input: ${said}`).toBe(false);
  expect(CODES.has(outcome.code) || /^http_4\d\d$/.test(outcome.code), `a readable answer: ${said}`).toBe(true);
  if (outcome.httpStatus !== undefined) {
    expect(outcome.httpStatus, said).toBeGreaterThanOrEqual(400);
    expect(outcome.httpStatus, said).toBeLessThan(500);
  }
  if (expected !== undefined) expect([expected].flat(), said).toContain(outcome.code);
}

/**
 * After an abusive call, an ordinary one is still answered: a resolve of `did` (which the test
 * published) over `protocol` finds it.
 */
export async function expectStillServing(baseUrl: string, protocol: Protocol, did: string): Promise<void> {
  const client = registryClient(protocol, baseUrl);
  try {
    const resolved = await client.resolve(did);
    expect(resolved.code, `a normal resolve after the abuse: ${resolved.message}`).toBe("ok");
    expect(resolved.body.entryDid).toBe(did);
  } finally {
    client.close();
  }
}

/** The result of `work` and how long it took, in milliseconds. */
export async function timed<T>(work: () => Promise<T>): Promise<{ result: T; ms: number }> {
  const started = performance.now();
  const result = await work();
  return { result, ms: performance.now() - started };
}
