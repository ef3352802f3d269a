import canonicalize from "canonicalize";

/**
 * The canonical bytes a controller signs for a lifecycle action and a moderator for a moderation
 * action (CONTRACT-HISTORY sections 12 and 13). Browser-safe like signing-payload.ts, so the SDK's
 * verifier, the CLI and the server build the same bytes from one definition.
 */

export const LIFECYCLE_PAYLOAD_TYPE = "registry.lifecycle.v1";
export const MODERATION_PAYLOAD_TYPE = "registry.moderation.v1";

/** The payload types whose `issuedAt` must grow per subject (section "Common to every signed payload"). */
export const ACTION_PAYLOAD_TYPES = [LIFECYCLE_PAYLOAD_TYPE, MODERATION_PAYLOAD_TYPE] as const;
export type ActionPayloadType = (typeof ACTION_PAYLOAD_TYPES)[number];

export const LIFECYCLE_ACTIONS = ["deprecate", "undeprecate", "yank", "unyank", "archive", "unarchive"] as const;
export type LifecycleAction = (typeof LIFECYCLE_ACTIONS)[number];

/** The lifecycle actions on the name rather than on its versions: they take only a bare DID. */
export const NAME_ACTIONS = ["archive", "unarchive"] as const satisfies readonly LifecycleAction[];
export type NameAction = (typeof NAME_ACTIONS)[number];
export type VersionLifecycleAction = Exclude<LifecycleAction, NameAction>;

/** The lifecycle actions that undo another: their reason may be empty. */
export const UNDO_ACTIONS = ["undeprecate", "unyank", "unarchive"] as const satisfies readonly LifecycleAction[];

export const MODERATION_ACTIONS = ["quarantine", "unquarantine", "remove"] as const;
export type ModerationAction = (typeof MODERATION_ACTIONS)[number];

export const MODERATION_POLICIES = ["malware", "phishing", "impersonation", "spam", "legal", "other"] as const;
export type ModerationPolicy = (typeof MODERATION_POLICIES)[number];

/** The members of a `registry.lifecycle.v1` payload but its type. */
export interface LifecyclePayloadFields {
  /** The entry DID as addressed (decoded from the path), with or without "@version". */
  readonly subject: string;
  readonly action: LifecycleAction;
  readonly reason?: string;
  /** An entry DID, only with `deprecate`. */
  readonly replacement?: string;
  /** The DID whose key signs. */
  readonly by: string;
  /** Signed exactly as given: the rules accept only the `toISOString()` form. */
  readonly issuedAt: string;
}

/** The members of a `registry.moderation.v1` payload but its type. */
export interface ModerationPayloadFields {
  readonly subject: string;
  readonly action: ModerationAction;
  /** `""` only for `unquarantine`. */
  readonly policy?: ModerationPolicy | "";
  readonly note?: string;
  readonly by: string;
  readonly issuedAt: string;
}

/** RFC 8785 (JCS) canonical JSON of the lifecycle payload, as UTF-8 bytes; every key present. */
export function lifecycleSigningPayload(fields: LifecyclePayloadFields): Uint8Array {
  return utf8(
    canonicalJson({
      payloadType: LIFECYCLE_PAYLOAD_TYPE,
      subject: fields.subject,
      action: fields.action,
      reason: fields.reason ?? "",
      replacement: fields.replacement ?? "",
      by: fields.by,
      issuedAt: fields.issuedAt,
    }),
  );
}

/** RFC 8785 (JCS) canonical JSON of the moderation payload, as UTF-8 bytes; every key present. */
export function moderationSigningPayload(fields: ModerationPayloadFields): Uint8Array {
  return utf8(
    canonicalJson({
      payloadType: MODERATION_PAYLOAD_TYPE,
      subject: fields.subject,
      action: fields.action,
      policy: fields.policy ?? "",
      note: fields.note ?? "",
      by: fields.by,
      issuedAt: fields.issuedAt,
    }),
  );
}

// The same two steps as signing-payload.ts, whose helpers are private to it.
function canonicalJson(value: unknown): string {
  const text = canonicalize(value);
  if (text === undefined) throw new TypeError("payload cannot be canonicalized");
  return text;
}

function utf8(text: string): Uint8Array {
  return new TextEncoder().encode(text);
}
