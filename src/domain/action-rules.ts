import { FailedPreconditionError, ViolationList } from "../errors.js";
import {
  LIFECYCLE_ACTIONS,
  type LifecycleAction,
  MODERATION_ACTIONS,
  MODERATION_POLICIES,
  type ModerationAction,
  type ModerationPolicy,
  NAME_ACTIONS,
  UNDO_ACTIONS,
} from "./action-payloads.js";
import { type EntryDid, parseEntryDid } from "./entry-did.js";
import { textProblem } from "./json-input.js";

/**
 * The rules of a lifecycle or moderation request's own fields (CONTRACT-HISTORY sections 12 and
 * 13, and the `issuedAt` rule common to signed payloads), before any state is read. The signature's
 * form is checked by the caller with parseSignature, which needs node:crypto; this file stays
 * browser-safe so the CLI and the SDK refuse the same requests before sending them.
 */

export const ACTION_LIMITS = {
  reasonChars: 500,
  noteChars: 1_000,
  /** How far `issuedAt` may be from the registry's clock, either way. */
  issuedAtSkewMs: 5 * 60 * 1000,
} as const;

/** A lifecycle request as it arrives: the DID from the path, and the body's fields but the signature. */
export interface LifecycleRequestInput {
  readonly did?: string;
  readonly action?: string;
  readonly reason?: string;
  readonly replacement?: string;
  readonly issuedAt?: string;
}

export interface ValidLifecycleRequest {
  /** The DID as addressed: the payload's `subject`. */
  readonly subject: string;
  readonly did: EntryDid;
  readonly action: LifecycleAction;
  readonly reason: string;
  /** `""` unless the action is `deprecate` and one was named. */
  readonly replacement: string;
  readonly issuedAt: string;
}

export interface ModerationRequestInput {
  readonly did?: string;
  readonly action?: string;
  readonly policy?: string;
  readonly note?: string;
  readonly issuedAt?: string;
}

export type ValidModerationRequest = {
  readonly subject: string;
  readonly did: EntryDid;
  readonly note: string;
  readonly issuedAt: string;
} & (
  | { readonly action: Exclude<ModerationAction, "unquarantine">; readonly policy: ModerationPolicy }
  | { readonly action: "unquarantine"; readonly policy: ModerationPolicy | "" }
);

export interface ActionRulesOptions {
  /** The registry's clock. */
  readonly now: Date;
}

/** Exactly what `Date.prototype.toISOString()` writes for years 0000-9999. */
const ISO_STRING = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/;

/**
 * Checks a lifecycle request's fields and returns them typed, or throws an InvalidArgumentError
 * naming each offending field.
 */
export function validateLifecycleRequest(input: LifecycleRequestInput, options: ActionRulesOptions): ValidLifecycleRequest {
  const violations = new ViolationList();
  const did = parseEntryDid(input.did ?? "");
  if ("error" in did) violations.add("did", did.error);

  const action = oneOf(input.action ?? "", LIFECYCLE_ACTIONS);
  if ("error" in action) violations.add("action", action.error);
  else if (includes(NAME_ACTIONS, action.value) && !("error" in did) && did.version !== undefined) {
    violations.add("did", `${action.value} acts on a name: address it by its bare DID, without @version`);
  }

  const reason = input.reason ?? "";
  const mayBeEmpty = !("error" in action) && includes(UNDO_ACTIONS, action.value);
  addProblem(violations, "reason", textLengthProblem(reason, ACTION_LIMITS.reasonChars, mayBeEmpty));

  const replacement = input.replacement ?? "";
  if (replacement !== "") {
    if (!("error" in action) && action.value !== "deprecate") violations.add("replacement", "is allowed only with deprecate");
    else {
      const replacementDid = parseEntryDid(replacement);
      if ("error" in replacementDid) violations.add("replacement", replacementDid.error);
    }
  }

  addProblem(violations, "issuedAt", issuedAtProblem(input.issuedAt ?? "", options.now));

  violations.throwIfAny();
  return Object.freeze({
    subject: input.did ?? "",
    did: did as EntryDid,
    action: (action as { value: LifecycleAction }).value,
    reason,
    replacement,
    issuedAt: input.issuedAt ?? "",
  });
}

/**
 * Checks a moderation request's fields and returns them typed, or throws an InvalidArgumentError
 * naming each offending field.
 */
export function validateModerationRequest(input: ModerationRequestInput, options: ActionRulesOptions): ValidModerationRequest {
  const violations = new ViolationList();
  const did = parseEntryDid(input.did ?? "");
  if ("error" in did) violations.add("did", did.error);

  const action = oneOf(input.action ?? "", MODERATION_ACTIONS);
  if ("error" in action) violations.add("action", action.error);

  const policyText = input.policy ?? "";
  const policy = oneOf(policyText, MODERATION_POLICIES);
  const policyMayBeEmpty = !("error" in action) && action.value === "unquarantine";
  if ("error" in policy && !(policyText === "" && policyMayBeEmpty)) {
    violations.add("policy", policyText === "" ? "is required" : policy.error);
  }

  const note = input.note ?? "";
  addProblem(violations, "note", textLengthProblem(note, ACTION_LIMITS.noteChars, false));

  addProblem(violations, "issuedAt", issuedAtProblem(input.issuedAt ?? "", options.now));

  violations.throwIfAny();
  return Object.freeze({
    subject: input.did ?? "",
    did: did as EntryDid,
    action: (action as { value: ModerationAction }).value,
    policy: policyText as ModerationPolicy | "",
    note,
    issuedAt: input.issuedAt ?? "",
  }) as ValidModerationRequest;
}

/**
 * Why `issuedAt` is unusable, or undefined: it must be written as `toISOString()` writes it (so
 * the signed bytes have one form) and lie within 5 minutes of the registry's clock either way.
 */
export function issuedAtProblem(text: string, now: Date): string | undefined {
  if (text === "") return "is required";
  const time = Date.parse(text);
  // The round trip refuses calendar rollovers such as 2026-02-30, which Date.parse moves to March.
  if (!ISO_STRING.test(text) || Number.isNaN(time) || new Date(time).toISOString() !== text) {
    return "must be an RFC 3339 UTC time with milliseconds as toISOString() writes it, e.g. 2026-11-21T10:00:00.000Z";
  }
  if (Math.abs(time - now.getTime()) > ACTION_LIMITS.issuedAtSkewMs) {
    return "must be within 5 minutes of the registry's clock";
  }
  return undefined;
}

/**
 * Whether `issuedAt` is strictly later than the last accepted one for the same payload type and
 * subject (undefined when there is none), so a captured signature cannot be replayed.
 */
export function isLaterIssuedAt(issuedAt: string, lastAccepted: string | undefined): boolean {
  if (lastAccepted === undefined) return true;
  return Date.parse(issuedAt) > Date.parse(lastAccepted);
}

/** Throws the failed_precondition naming `issuedAt` that a replayed or stale signature gets. */
export function assertLaterIssuedAt(issuedAt: string, lastAccepted: string | undefined): void {
  if (!isLaterIssuedAt(issuedAt, lastAccepted)) {
    throw new FailedPreconditionError(
      `issuedAt: must be later than ${lastAccepted}, the issuedAt of the last accepted request for this subject (a replayed or stale signature)`,
    );
  }
}

/** The key under which the last accepted `issuedAt` is kept: one per payload type and subject. */
export function issuedAtScope(payloadType: string, subject: string): string {
  return `${payloadType} ${subject}`;
}

/** Why a text field is unusable, counting characters as code points as every other rule does. */
function textLengthProblem(text: string, maxChars: number, mayBeEmpty: boolean): string | undefined {
  const problem = textProblem(text);
  if (problem !== undefined) return problem;
  const chars = [...text].length;
  if (chars === 0 && !mayBeEmpty) return "is required";
  if (chars > maxChars) return `must be at most ${maxChars} characters`;
  return undefined;
}

function oneOf<T extends string>(text: string, values: readonly T[]): { readonly value: T } | { readonly error: string } {
  if (text === "") return { error: "is required" };
  return includes(values, text) ? { value: text } : { error: `must be one of: ${values.join(", ")}` };
}

function includes<T extends string>(values: readonly T[], text: string): text is T {
  return (values as readonly string[]).includes(text);
}

function addProblem(violations: ViolationList, field: string, problem: string | undefined): void {
  if (problem !== undefined) violations.add(field, problem);
}
