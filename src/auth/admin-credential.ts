import { createHash, randomBytes, timingSafeEqual } from "node:crypto";
import { UnauthenticatedError } from "../errors.js";

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

/** Checks the authorization header of an admin call against the one credential this server made. */
export interface AdminCredentialVerifier {
  /** Returns when `authorization` is "Bearer <the credential>"; throws UnauthenticatedError otherwise. */
  verify(authorization: string | null): void;
  /** Whether `text` is the credential (to tell this server's file from another's). */
  matches(text: string): boolean;
}

export function createAdminCredentialVerifier(credential: string): AdminCredentialVerifier {
  const expected = sha256(credential);
  const matches = (text: string) => timingSafeEqual(sha256(text), expected) && ADMIN_CREDENTIAL_PATTERN.test(text);
  return {
    matches,
    verify(authorization) {
      if (authorization === null || authorization === "") {
        throw new UnauthenticatedError('admin credential required: send "authorization: Bearer <the admin-credential file\'s contents>"');
      }
      const match = /^Bearer +(\S+)\s*$/i.exec(authorization);
      if (match === null) throw new UnauthenticatedError('authorization header must be "Bearer <admin credential>"');
      if (!matches(match[1]!)) {
        throw new UnauthenticatedError("admin credential is wrong: this server wrote another one to its data directory at start");
      }
    },
  };
}

/** Hashes have one length whatever was sent, so comparing them takes the same time for any guess. */
function sha256(text: string): Buffer {
  return createHash("sha256").update(text, "utf8").digest();
}
