/**
 * Page cursors for both discovery endpoints (structured discover and the query language).
 *
 * A cursor is an opaque base64url token that carries only a keyset position (the ORDER BY values
 * of the last row returned), never an OFFSET: with a keyset, entries published while a client
 * pages sort before the position and so are neither repeated nor skipped.
 *
 * - HMAC-signed with a server secret shared by all replicas, so a client cannot forge a position
 *   (or a `remaining` budget) and cannot make the server resume anywhere it did not stop itself.
 * - Bound to a fingerprint of the normalised query or conditions and the order, so a cursor cannot
 *   be replayed with different conditions, where its position would mean something else.
 * - Expiring (24 hours by default), so old cursors don't pin a query's behaviour forever and the
 *   format and secret can change without honouring every token ever issued.
 *
 * Wire layout, before base64url (no padding):
 *   version (1) | issued-at ms, big-endian (6) | SHA-256 of binding (32) | remaining (4,
 *   0xFFFFFFFF when absent) | total (4, likewise) | position as UTF-8 JSON array | HMAC-SHA256 tag (32)
 * The tag covers everything before it, prefixed with a context label so the same secret used for
 * another purpose can never yield a valid cursor.
 *
 * Pure: node:crypto only, no I/O. The clock is injectable for tests.
 */
import { createHash, createHmac, timingSafeEqual } from "node:crypto";
import { InvalidArgumentError } from "../errors.js";

/** One ORDER BY value. 64-bit integers (such as sequence) travel as decimal strings. */
export type CursorScalar = string | number | boolean | null;

export interface CursorState {
  /** Fingerprint of the normalised query/conditions and order, usually from {@link cursorBinding}. */
  readonly binding: string;
  /** ORDER BY values of the last row returned, in ORDER BY order. */
  readonly position: readonly CursorScalar[];
  /** How many rows of the query's overall LIMIT are still to be returned, if it has one. */
  readonly remaining?: number;
  /** The listing's match count from its first page, so every page reports the same total. */
  readonly total?: number;
}

export interface DecodedCursor {
  readonly position: CursorScalar[];
  readonly remaining?: number;
  readonly total?: number;
}

export interface CursorCodec {
  encode(state: CursorState): string;
  /** Throws InvalidArgumentError on field "cursor" for any cursor this server should not resume. */
  decode(cursor: string, expectedBinding: string): DecodedCursor;
}

export interface CursorCodecOptions {
  /** Signing secret, at least 32 bytes (a string is taken as its UTF-8 bytes). */
  readonly secret: Uint8Array | string;
  /** Secrets accepted by decode only, so cursors stay valid across a secret rotation. */
  readonly previousSecrets?: readonly (Uint8Array | string)[];
  readonly ttlMs?: number;
  /** Milliseconds since the epoch. */
  readonly clock?: () => number;
}

export const CURSOR_FIELD = "cursor";
/**
 * Positions carry the last row's ORDER BY values, and a description or a data value can be long;
 * the bound keeps a cursor well inside the request body limit.
 */
export const MAX_CURSOR_LENGTH = 64 * 1024;
export const DEFAULT_CURSOR_TTL_MS = 24 * 60 * 60 * 1000;
export const MIN_CURSOR_SECRET_BYTES = 32;
/** Replicas' clocks drift; a cursor from a slightly fast replica must still work on the others. */
export const CURSOR_CLOCK_SKEW_MS = 60_000;

export const CURSOR_ERRORS = {
  malformed: "is not a valid cursor",
  tooLong: `is not a valid cursor (longer than ${MAX_CURSOR_LENGTH} characters)`,
  signature: "has an invalid signature (it was altered or not issued by this registry)",
  version: "has an unsupported version",
  expired: "has expired; start again without a cursor",
  future: "was issued in the future",
  binding: "belongs to another query",
} as const;

const VERSION = 1;
const TAG_BYTES = 32;
const BINDING_BYTES = 32;
const OFFSET_ISSUED_AT = 1;
const OFFSET_BINDING = OFFSET_ISSUED_AT + 6;
const OFFSET_REMAINING = OFFSET_BINDING + BINDING_BYTES;
const OFFSET_TOTAL = OFFSET_REMAINING + 4;
const OFFSET_POSITION = OFFSET_TOTAL + 4;
/** Marks an absent remaining or total. */
const ABSENT = 0xffffffff;
const MAC_CONTEXT = Buffer.from("open-registry page-cursor\0", "utf8");
const BASE64URL = /^[A-Za-z0-9_-]+$/;

/**
 * SHA-256 (base64url) of a canonical JSON of `value`: object keys sorted, so two requests that say
 * the same thing in a different key order share cursors. Include everything that changes what a
 * position means: endpoint, normalised conditions, order, and the overall limit.
 */
export function cursorBinding(value: unknown): string {
  return createHash("sha256").update(canonicalJson(value), "utf8").digest("base64url");
}

export function createCursorCodec(options: CursorCodecOptions): CursorCodec {
  const signingKey = secretBytes(options.secret, "secret");
  const verifyingKeys = [signingKey, ...(options.previousSecrets ?? []).map((s, i) => secretBytes(s, `previousSecrets[${i}]`))];
  const ttlMs = options.ttlMs ?? DEFAULT_CURSOR_TTL_MS;
  if (!Number.isSafeInteger(ttlMs) || ttlMs <= 0) throw new RangeError("cursor ttlMs must be a positive integer");
  const clock = options.clock ?? Date.now;

  return {
    encode(state) {
      const payload = Buffer.concat([header(state, clock()), positionBytes(state.position)]);
      const cursor = Buffer.concat([payload, tag(signingKey, payload)]).toString("base64url");
      // A cursor the server itself would refuse is a bug in the caller (an oversized position).
      if (cursor.length > MAX_CURSOR_LENGTH) throw new RangeError("cursor position is too large to encode");
      return cursor;
    },

    decode(cursor, expectedBinding) {
      const bytes = cursorBytes(cursor);
      const payload = bytes.subarray(0, bytes.length - TAG_BYTES);
      const received = bytes.subarray(bytes.length - TAG_BYTES);
      // Nothing in the payload is looked at before the tag checks out: it is attacker-controlled.
      if (!verifyingKeys.some((key) => timingSafeEqual(tag(key, payload), received))) {
        throw invalid(CURSOR_ERRORS.signature);
      }
      if (payload[0] !== VERSION) throw invalid(CURSOR_ERRORS.version);
      checkAge(payload.readUIntBE(OFFSET_ISSUED_AT, 6), clock(), ttlMs);
      const binding = payload.subarray(OFFSET_BINDING, OFFSET_REMAINING);
      if (!timingSafeEqual(binding, bindingDigest(expectedBinding))) throw invalid(CURSOR_ERRORS.binding);
      const remaining = payload.readUInt32BE(OFFSET_REMAINING);
      const total = payload.readUInt32BE(OFFSET_TOTAL);
      const position = parsePosition(payload.subarray(OFFSET_POSITION));
      return {
        position,
        ...(remaining === ABSENT ? {} : { remaining }),
        ...(total === ABSENT ? {} : { total }),
      };
    },
  };
}

function secretBytes(secret: Uint8Array | string, name: string): Buffer {
  const bytes = typeof secret === "string" ? Buffer.from(secret, "utf8") : Buffer.from(secret);
  if (bytes.length < MIN_CURSOR_SECRET_BYTES) {
    throw new RangeError(`cursor ${name} must be at least ${MIN_CURSOR_SECRET_BYTES} bytes`);
  }
  return bytes;
}

function header(state: CursorState, now: number): Buffer {
  const out = Buffer.alloc(OFFSET_POSITION);
  out[0] = VERSION;
  out.writeUIntBE(now, OFFSET_ISSUED_AT, 6);
  bindingDigest(state.binding).copy(out, OFFSET_BINDING);
  out.writeUInt32BE(optionalCount(state.remaining, "remaining"), OFFSET_REMAINING);
  out.writeUInt32BE(optionalCount(state.total, "total"), OFFSET_TOTAL);
  return out;
}

function optionalCount(value: number | undefined, name: string): number {
  if (value === undefined) return ABSENT;
  if (!(Number.isSafeInteger(value) && value >= 0 && value < ABSENT)) {
    throw new RangeError(`cursor ${name} must be a non-negative 32-bit integer`);
  }
  return value;
}

/** Hashed so any binding string fits a fixed-size slot. */
function bindingDigest(binding: string): Buffer {
  return createHash("sha256").update(binding, "utf8").digest();
}

function tag(key: Buffer, payload: Buffer): Buffer {
  return createHmac("sha256", key).update(MAC_CONTEXT).update(payload).digest();
}

function positionBytes(position: readonly CursorScalar[]): Buffer {
  if (!Array.isArray(position) || !position.every(isScalar)) {
    throw new TypeError("cursor position must be an array of JSON scalars (64-bit integers as decimal strings)");
  }
  return Buffer.from(JSON.stringify(position), "utf8");
}

function isScalar(value: unknown): value is CursorScalar {
  if (typeof value === "number") return Number.isFinite(value) && (!Number.isInteger(value) || Number.isSafeInteger(value));
  return value === null || typeof value === "string" || typeof value === "boolean";
}

/** Shape checks before any crypto, so garbage and oversized input cost next to nothing. */
function cursorBytes(cursor: string): Buffer {
  if (typeof cursor !== "string") throw invalid(CURSOR_ERRORS.malformed);
  if (cursor.length > MAX_CURSOR_LENGTH) throw invalid(CURSOR_ERRORS.tooLong);
  if (!BASE64URL.test(cursor)) throw invalid(CURSOR_ERRORS.malformed);
  const bytes = Buffer.from(cursor, "base64url");
  // Node ignores spare bits and stray trailing characters; insisting on the canonical form means
  // every change to the text is a change to the signed bytes.
  if (bytes.toString("base64url") !== cursor) throw invalid(CURSOR_ERRORS.malformed);
  if (bytes.length < OFFSET_POSITION + 2 + TAG_BYTES) throw invalid(CURSOR_ERRORS.malformed);
  return bytes;
}

function checkAge(issuedAt: number, now: number, ttlMs: number): void {
  if (issuedAt > now + CURSOR_CLOCK_SKEW_MS) throw invalid(CURSOR_ERRORS.future);
  if (now >= issuedAt + ttlMs) throw invalid(CURSOR_ERRORS.expired);
}

/** Only reached for signed payloads, so a failure here means a server bug, reported as malformed. */
function parsePosition(bytes: Buffer): CursorScalar[] {
  let value: unknown;
  try {
    value = JSON.parse(bytes.toString("utf8"));
  } catch {
    throw invalid(CURSOR_ERRORS.malformed);
  }
  if (!Array.isArray(value) || !value.every(isScalar)) throw invalid(CURSOR_ERRORS.malformed);
  return value;
}

function invalid(reason: string): InvalidArgumentError {
  // Never echo the cursor: it is opaque and may be long; the reason is what helps the client.
  return InvalidArgumentError.of(CURSOR_FIELD, reason);
}

/** JSON with object keys sorted at every depth; undefined members dropped as JSON.stringify does. */
function canonicalJson(value: unknown): string {
  if (value !== null && typeof value === "object" && typeof (value as { toJSON?: unknown }).toJSON === "function") {
    return canonicalJson((value as { toJSON(): unknown }).toJSON());
  }
  if (Array.isArray(value)) {
    return `[${value.map((item) => (item === undefined ? "null" : canonicalJson(item))).join(",")}]`;
  }
  if (value !== null && typeof value === "object") {
    const members = Object.keys(value)
      .filter((key) => (value as Record<string, unknown>)[key] !== undefined)
      .sort()
      .map((key) => `${JSON.stringify(key)}:${canonicalJson((value as Record<string, unknown>)[key])}`);
    return `{${members.join(",")}}`;
  }
  if (typeof value === "bigint") return JSON.stringify(value.toString());
  if (typeof value === "number" && !Number.isFinite(value)) throw new TypeError("cursor binding numbers must be finite");
  const text = JSON.stringify(value);
  if (text === undefined) throw new TypeError("cursor binding must be JSON-serialisable");
  return text;
}
