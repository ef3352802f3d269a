import type { RegistryErrorCode } from "../sdk/client-error.js";

/**
 * The `registry` command's exit codes, one per kind of failure a script may want to tell apart.
 * docs/cli.md and `registry --help` show this table.
 */
export const EXIT = {
  ok: 0,
  /** The registry (or the command itself) refused: an invalid field, a name taken, a file that cannot be read. */
  refused: 1,
  /** The command line was wrong: unknown command or option, a missing argument. */
  usage: 2,
  /** What was asked for does not exist (not_found). */
  notFound: 3,
  /** Credentials were missing, unknown or not enough (unauthenticated, permission_denied). */
  auth: 4,
  /** The registry could not be reached or failed (unavailable, internal, deadline_exceeded, ...). */
  serverOrNetwork: 5,
  /** A proof or signature from the transparency log did not verify (registry verify, registry mirror). */
  unverified: 6,
} as const;

export const EXIT_CODES_HELP = `Exit codes:
  0  success
  1  refused: the registry refused the request (invalid_argument, already_exists, ...) or a local
     file or key was unusable
  2  usage: unknown command or option, missing argument
  3  not found
  4  auth: unauthenticated or permission_denied (log in again, or check the token's scopes)
  5  server or network: the registry could not be reached, timed out or failed
  6  unverified: a transparency-log proof or a signature did not verify (registry verify, mirror)`;

/** The exit code of a failed registry call, by its Connect code. */
export function exitCodeOf(code: RegistryErrorCode): number {
  switch (code) {
    case "not_found":
      return EXIT.notFound;
    case "unauthenticated":
    case "permission_denied":
      return EXIT.auth;
    case "invalid_argument":
    case "already_exists":
    case "failed_precondition":
    case "out_of_range":
    case "aborted":
      return EXIT.refused;
    default:
      // unknown (a fetch that never got an answer), unavailable, internal, deadline_exceeded,
      // resource_exhausted (rate limited: retry later), unimplemented, data_loss, canceled.
      return EXIT.serverOrNetwork;
  }
}

/** A failure the CLI itself detected, with the exit code it means. */
export class CliFailure extends Error {
  constructor(
    message: string,
    readonly exitCode: number,
  ) {
    super(message);
  }
}
