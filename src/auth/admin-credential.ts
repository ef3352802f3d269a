import { createHash, randomBytes, timingSafeEqual } from "node:crypto";
import { ResourceExhaustedError, UnauthenticatedError } from "../errors.js";
import { createAttemptLimit, type AttemptLimit } from "../rate-limits/attempt-limit.js";

/**
 * The admin credential: a secret a server makes at each start for auth.v1.AdminService, written
 * where only the operator's account can read it (see src/storage/admin-credential-file.ts). The
 * server keeps only its SHA-256, so a heap dump does not hand it out.
 */

const ADMIN_CREDENTIAL_BYTES = 32;
/** 32 random bytes are 43 base64url characters without padding. */
const ADMIN_CREDENTIAL_PATTERN = /^[A-Za-z0-9_-]{43}$/;

/** A fresh admin credential: 256 random bits, base64url. */
export function generateAdminCredential(): string {
  return randomBytes(ADMIN_CREDENTIAL_BYTES).toString("base64url");
}

/**
 * Wrong admin credentials allowed per client address: 30 at once, then one a minute. Guessing 256
 * bits is hopeless anyway; this keeps a scanner from spending the server's time (and log) on it,
 * while an operator's typos never come near it. Only guesses count: a missing or malformed header
 * tells its sender nothing about the credential.
 */
export const ADMIN_ATTEMPT_LIMIT = Object.freeze({ burst: 30, rate: 1 / 60 });

/** Checks the authorization header of an admin call against the one credential this server made. */
export interface AdminCredentialVerifier {
  /**
   * Returns when `authorization` is "Bearer <the credential>"; throws UnauthenticatedError
   * otherwise, or ResourceExhaustedError, without looking, once `client` (its address key) has
   * used up its wrong guesses (ADMIN_ATTEMPT_LIMIT).
   */
  verify(authorization: string | null, client: string): void;
  /** Whether `text` is the credential (to tell this server's file from another's). */
  matches(text: string): boolean;
}

export function createAdminCredentialVerifier(
  credential: string,
  attempts: AttemptLimit = createAttemptLimit(ADMIN_ATTEMPT_LIMIT),
): AdminCredentialVerifier {
  const expected = sha256(credential);
  const matches = (text: string) => timingSafeEqual(sha256(text), expected) && ADMIN_CREDENTIAL_PATTERN.test(text);
  return {
    matches,
    verify(authorization, client) {
      const waitMs = attempts.waitMs(client);
      if (waitMs > 0) {
        const { burst, rate } = ADMIN_ATTEMPT_LIMIT;
        throw new ResourceExhaustedError(
          `too many wrong admin credentials from this address (${burst}, then one every ${1 / rate} s): retry in ${Math.ceil(waitMs / 1000)} s`,
        );
      }
      if (!matches(bearerOf(authorization))) {
        attempts.failed(client);
        throw new UnauthenticatedError("admin credential is wrong: this server wrote another one to its data directory at start");
      }
    },
  };
}

/** The credential an authorization header offers; throws UnauthenticatedError when it offers none. */
function bearerOf(authorization: string | null): string {
  if (authorization === null || authorization === "") {
    throw new UnauthenticatedError('admin credential required: send "authorization: Bearer <the admin-credential file\'s contents>"');
  }
  const match = /^Bearer +(\S+)\s*$/i.exec(authorization);
  if (match === null) throw new UnauthenticatedError('authorization header must be "Bearer <admin credential>"');
  return match[1]!;
}

/** Hashes have one length whatever was sent, so comparing them takes the same time for any guess. */
function sha256(text: string): Buffer {
  return createHash("sha256").update(text, "utf8").digest();
}
