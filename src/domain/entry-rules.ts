import { ViolationList } from "../errors.js";
import {
  ENTRY_FIELDS,
  ENTRY_PAYLOAD_TYPES,
  fieldSpec,
  type EntryField,
  type EntryInputFields,
  type EntryPayloadType,
  type PublishedFields,
} from "./entry-fields.js";
import { ed25519KeyFromDid } from "./did-key.js";
import { parseEntryDid } from "./entry-did.js";
import { parseSignature } from "./ed25519-signature.js";
import { parseVersion } from "./semver-order.js";
import { formatFieldPath, jsonValueProblems, textProblem } from "./json-input.js";
import { TEXT_RULES } from "./text-rules.js";

/** An entry as a publisher sends it: every field may be missing or malformed. */
export type EntryInput = EntryInputFields & {
  /** Fields the registry sets; a request that carries them is refused. */
  readonly serviceSetFields?: readonly string[];
};

/**
 * An entry that passed every rule, normalised for storage: the catalogue's publisher and derived
 * fields (publishedAt at millisecond precision, UTC), plus what checking and storing it needs.
 * Its signature is not yet checked.
 */
export type ValidEntry = PublishedFields & {
  readonly versionSortKey: string;
  readonly isPrerelease: boolean;
  readonly publisherKey: Uint8Array;
  readonly signatureBytes: Uint8Array;
};

export interface EntryRulesOptions {
  /** The entry types this registry accepts. */
  readonly entryTypes: readonly string[];
  /** The registry's clock. */
  readonly now: Date;
}

export const ENTRY_LIMITS = {
  descriptionChars: 2_000,
  tags: 32,
  dataBytes: 32 * 1024,
  dataDepth: 16,
  futureSkewMs: 5 * 60 * 1000,
} as const;

/** Enough to show a sender the pattern of what is wrong, without echoing a whole hostile object back. */
const MAX_DATA_PROBLEMS = 8;

const TAG = /^[a-z0-9][a-z0-9._-]{0,63}$/;
const CONTENT_HASH = /^sha256:[0-9a-f]{64}$/;
const BOND_AMOUNT = /^(0|[1-9][0-9]{0,29})(\.[0-9]{1,18})? [A-Z][A-Z0-9]{1,15}$/;
const RFC3339_UTC = /^(\d{4})-(\d{2})-(\d{2})[Tt](\d{2}):(\d{2}):(\d{2})(?:\.(\d{1,3}))?(?:[Zz]|[+-]00:00)$/;

/**
 * Checks an entry against every rule of the registry and returns it normalised, or throws an
 * InvalidArgumentError listing each offending field.
 */
export function validateEntry(input: EntryInput, options: EntryRulesOptions): ValidEntry {
  const violations = new ViolationList();
  for (const field of input.serviceSetFields ?? []) {
    violations.add(field, "is set by the registry and must not be sent");
  }

  const entryType = input.entryType ?? "";
  if (entryType === "") violations.add("entryType", "is required");
  else if (!options.entryTypes.includes(entryType)) {
    violations.add("entryType", `must be one of: ${options.entryTypes.join(", ")}`);
  }

  const version = parseVersion(input.version ?? "");
  if ("error" in version) violations.add("version", version.error);

  const did = parseEntryDid(input.entryDid ?? "");
  if ("error" in did) violations.add("entryDid", did.error);
  else if (did.version === undefined) violations.add("entryDid", "must end with @<version>");
  else {
    if (entryType !== "" && did.entryType !== entryType) {
      violations.add("entryDid", `its entryType part "${did.entryType}" must equal entryType`);
    }
    if (!("error" in version) && did.version.version !== version.version) {
      violations.add("entryDid", `its version part "${did.version.version}" must equal version`);
    }
  }

  const publisherKey = ed25519KeyFromDid(input.publisherDid ?? "");
  if (input.publisherDid === undefined || input.publisherDid === "") {
    violations.add("publisherDid", "is required");
  } else if ("error" in publisherKey) violations.add("publisherDid", publisherKey.error);

  const publishedAt = parsePublishedAt(input.publishedAt ?? "", options.now);
  if ("error" in publishedAt) violations.add("publishedAt", publishedAt.error);

  const description = input.description ?? "";
  const descriptionProblem = textProblem(description);
  if (descriptionProblem !== undefined) violations.add("description", descriptionProblem);
  else if (codePoints(description) > ENTRY_LIMITS.descriptionChars) {
    violations.add("description", `must be at most ${ENTRY_LIMITS.descriptionChars} characters`);
  }

  checkTags(input.tags ?? [], violations);
  checkData(input.data ?? {}, violations);

  const contentHash = input.contentHash ?? "";
  if (contentHash === "") violations.add("contentHash", "is required");
  else if (!CONTENT_HASH.test(contentHash)) {
    violations.add("contentHash", "must be sha256: followed by 64 lowercase hex digits");
  }

  const bondAmount = input.bondAmount ?? "";
  if (bondAmount !== "" && !BOND_AMOUNT.test(bondAmount)) {
    violations.add(
      "bondAmount",
      'must be "<amount> <unit>": a non-negative decimal (at most 30 integer and 18 fraction digits, no leading zeros) and a unit of 2-16 of [A-Z0-9] starting with a letter, e.g. "100 USDC"',
    );
  }

  const payloadType = checkPayloadType(input, violations);
  const optionalTexts = checkOptionalTexts(input, payloadType, violations);

  const signature = parseSignature(input.signature ?? "");
  if ("error" in signature) violations.add("signature", signature.error);

  violations.throwIfAny();
  // Every branch above that could fail has added a violation, so these narrowings hold.
  const okDid = did as Exclude<typeof did, { error: string }>;
  const okVersion = version as Exclude<typeof version, { error: string }>;
  return {
    entryDid: `${okDid.baseDid}@${okVersion.version}`,
    baseDid: okDid.baseDid,
    entryType,
    name: okDid.name,
    version: okVersion.version,
    versionSortKey: okVersion.sortKey,
    isPrerelease: okVersion.isPrerelease,
    publisherDid: input.publisherDid ?? "",
    publisherKey: publisherKey as Uint8Array,
    publishedAt: publishedAt as Date,
    description,
    tags: [...(input.tags ?? [])],
    data: input.data ?? {},
    contentHash,
    bondAmount,
    ...optionalTexts,
    payloadType,
    signature: input.signature ?? "",
    signatureBytes: signature as Uint8Array,
  };
}

/** Unset means v1, so clients written before v2 existed keep publishing unchanged. */
function checkPayloadType(input: EntryInput, violations: ViolationList): EntryPayloadType {
  const payloadType = input.payloadType ?? "";
  if (payloadType === "") return "registry.entry.v1";
  if ((ENTRY_PAYLOAD_TYPES as readonly string[]).includes(payloadType)) return payloadType as EntryPayloadType;
  violations.add("payloadType", `must be one of: ${ENTRY_PAYLOAD_TYPES.join(", ")}`);
  return "registry.entry.v1";
}

/** The catalogue's fields with a text rule: "" when absent, checked when set, and only under a payload that signs them. */
const OPTIONAL_TEXT_FIELDS = ENTRY_FIELDS.filter((field) => fieldSpec(field).textRule !== undefined);

type OptionalTexts = { readonly [F in EntryField as F extends { readonly textRule: string } ? F["name"] : never]: string };

function checkOptionalTexts(input: EntryInput, payloadType: EntryPayloadType, violations: ViolationList): OptionalTexts {
  const texts: Record<string, string> = {};
  for (const field of OPTIONAL_TEXT_FIELDS) {
    const value: unknown = input[field.name as keyof EntryInput] ?? "";
    texts[field.name] = typeof value === "string" ? value : "";
    if (typeof value !== "string") violations.add(field.name, "must be a string");
    else if (value === "") continue;
    else if (fieldSpec(field).since === 2 && payloadType === "registry.entry.v1") {
      violations.add(field.name, "is not signed by registry.entry.v1: sign registry.entry.v2 to set it");
    } else {
      const problem = textProblem(value) ?? TEXT_RULES[fieldSpec(field).textRule ?? "https-url"](value);
      if (problem !== undefined) violations.add(field.name, problem);
    }
  }
  return texts as OptionalTexts;
}

function parsePublishedAt(text: string, now: Date): Date | { error: string } {
  if (text === "") return { error: "is required" };
  const match = RFC3339_UTC.exec(text);
  if (match === null) {
    return {
      error: "must be an RFC 3339 time in UTC with at most millisecond precision, e.g. 2026-11-21T10:00:00.000Z",
    };
  }
  const [, y, mo, d, h, mi, s] = match.map(Number) as number[];
  const date = new Date(text.replace(/[+-]00:00$/, "Z"));
  // Date.parse rolls 2026-02-30 over to March; a real calendar time reads back the same parts.
  if (
    Number.isNaN(date.getTime()) ||
    date.getUTCFullYear() !== y ||
    date.getUTCMonth() + 1 !== mo ||
    date.getUTCDate() !== d ||
    date.getUTCHours() !== h ||
    date.getUTCMinutes() !== mi ||
    date.getUTCSeconds() !== s
  ) {
    return { error: "is not a valid calendar time" };
  }
  if (date.getTime() - now.getTime() > ENTRY_LIMITS.futureSkewMs) {
    return { error: "must not be more than 5 minutes ahead of the registry's clock" };
  }
  return date;
}

function checkTags(tags: readonly string[], violations: ViolationList): void {
  if (tags.length > ENTRY_LIMITS.tags) {
    violations.add("tags", `must have at most ${ENTRY_LIMITS.tags} tags`);
    return;
  }
  const seen = new Set<string>();
  tags.forEach((tag, index) => {
    if (!TAG.test(tag)) {
      violations.add(`tags[${index}]`, "must be 1-64 characters of [a-z0-9._-] starting with a letter or digit");
    } else if (seen.has(tag)) violations.add(`tags[${index}]`, `duplicates tag "${tag}"`);
    seen.add(tag);
  });
}

function checkData(data: Record<string, unknown>, violations: ViolationList): void {
  if (typeof data !== "object" || data === null || Array.isArray(data)) {
    violations.add("data", "must be a JSON object");
    return;
  }
  const bytes = new TextEncoder().encode(JSON.stringify(data)).length;
  if (bytes > ENTRY_LIMITS.dataBytes) {
    violations.add("data", `must be at most ${ENTRY_LIMITS.dataBytes} bytes as JSON`);
  }
  if (depthOf(data, ENTRY_LIMITS.dataDepth + 1) > ENTRY_LIMITS.dataDepth) {
    violations.add("data", `must be nested at most ${ENTRY_LIMITS.dataDepth} deep`);
  }
  // Checked before the entry is canonicalised for its signature or stored: the canonical form has
  // no Infinity or NaN, and Postgres jsonb refuses NUL and unpaired surrogates.
  const problems = jsonValueProblems(data, { depth: ENTRY_LIMITS.dataDepth, problems: MAX_DATA_PROBLEMS });
  for (const { path, problem } of problems) violations.add(formatFieldPath("data", path), problem);
}

/** Nesting depth of a JSON value, counted no further than `cap` so hostile input cannot recurse deeply. */
function depthOf(value: unknown, cap: number): number {
  if (typeof value !== "object" || value === null || cap === 0) return 0;
  let deepest = 0;
  for (const child of Object.values(value)) {
    deepest = Math.max(deepest, depthOf(child, cap - 1));
    if (deepest >= cap - 1) break;
  }
  return deepest + 1;
}

function codePoints(text: string): number {
  let count = 0;
  for (const _ of text) count++;
  return count;
}
