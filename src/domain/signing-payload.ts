import canonicalize from "canonicalize";
import { ENTRY_FIELDS, fieldSpec, type EntryField, type EntryInputFields, type EntryPayloadType } from "./entry-fields.js";

/**
 * The canonical bytes publishers sign. Runs in browsers as well as Node (no Node imports), so the
 * client SDK and the server share one definition and cannot drift apart.
 */

export const ENTRY_PAYLOAD_TYPE = "registry.entry.v1" satisfies EntryPayloadType;
export const ENTRY_PAYLOAD_TYPE_V2 = "registry.entry.v2" satisfies EntryPayloadType;
export const REVOKE_PAYLOAD_TYPE = "registry.revoke.v1";

type SignedField = Extract<EntryField, { readonly signed: true }>;
type RequiredName = Extract<SignedField, { readonly required: true }>["name"];
type OptionalName = Exclude<SignedField["name"], RequiredName | "payloadType">;

/**
 * The publisher-set fields of an entry, as covered by its signature: the catalogue's signed fields.
 * `publishedAt` may be any RFC 3339 form; it is signed as `Date.prototype.toISOString()` writes it.
 */
export type EntrySigningFields = { readonly [N in RequiredName]: NonNullable<EntryInputFields[N]> } & {
  readonly [N in OptionalName]?: EntryInputFields[N];
} & {
  /** Unset means `registry.entry.v1`, as the registry reads a create that names none. */
  readonly payloadType?: EntryPayloadType | (string & {});
};

/** A field some payload version does not sign; set on an entry of that version, it would go unsigned. */
export class UnsignedFieldError extends Error {
  constructor(
    readonly field: string,
    readonly payloadType: string,
  ) {
    super(`${field} is not signed by ${payloadType}: sign ${ENTRY_PAYLOAD_TYPE_V2} to set it`);
  }
}

const SIGNED_FIELDS: readonly EntryField[] = ENTRY_FIELDS.filter((field) => fieldSpec(field).signed === true);
/** The fields v1 never signed: an entry of that version must leave them empty. */
export const FIELDS_SINCE_V2: readonly EntryField[] = SIGNED_FIELDS.filter((field) => fieldSpec(field).since === 2);

/**
 * RFC 8785 (JCS) canonical JSON of the create payload its `payloadType` names, as UTF-8 bytes.
 * Throws UnsignedFieldError for a v1 entry that sets a field v1 does not sign, and TypeError for
 * an unknown payload type.
 */
export function entrySigningPayload(fields: EntrySigningFields): Uint8Array {
  const payloadType = fields.payloadType === undefined || fields.payloadType === "" ? ENTRY_PAYLOAD_TYPE : fields.payloadType;
  if (payloadType === ENTRY_PAYLOAD_TYPE) return utf8(canonicalJson(v1Payload(fields)));
  if (payloadType === ENTRY_PAYLOAD_TYPE_V2) return utf8(canonicalJson(v2Payload(fields)));
  throw new TypeError(`unknown entry payload type ${payloadType}`);
}

/** `registry.entry.v1`: frozen. Every field present, with a default; a field added later is never part of it. */
function v1Payload(fields: EntrySigningFields): Record<string, unknown> {
  for (const field of FIELDS_SINCE_V2) {
    if (!isEmpty(fields[field.name as keyof EntrySigningFields])) throw new UnsignedFieldError(field.name, ENTRY_PAYLOAD_TYPE);
  }
  return {
    payloadType: ENTRY_PAYLOAD_TYPE,
    entryDid: fields.entryDid,
    entryType: fields.entryType,
    version: fields.version,
    publisherDid: fields.publisherDid,
    publishedAt: new Date(fields.publishedAt).toISOString(),
    description: fields.description ?? "",
    tags: fields.tags ?? [],
    data: fields.data ?? {},
    contentHash: fields.contentHash,
    bondAmount: fields.bondAmount ?? "",
  };
}

/**
 * `registry.entry.v2`: the required fields, and each other signed field whose value is not empty
 * (`""`, `[]`, `{}` are left out), so a field added later is absent from every older payload.
 */
function v2Payload(fields: EntrySigningFields): Record<string, unknown> {
  const payload: Record<string, unknown> = {};
  for (const field of SIGNED_FIELDS) {
    const value = fields[field.name as keyof EntrySigningFields];
    if (fieldSpec(field).required === true) payload[field.name] = value;
    else if (!isEmpty(value)) payload[field.name] = value;
  }
  payload.payloadType = ENTRY_PAYLOAD_TYPE_V2;
  payload.publishedAt = new Date(fields.publishedAt).toISOString();
  return payload;
}

function isEmpty(value: unknown): boolean {
  if (value === undefined || value === null || value === "") return true;
  if (Array.isArray(value)) return value.length === 0;
  return typeof value === "object" && Object.keys(value).length === 0;
}

/**
 * RFC 8785 canonical JSON of the revocation payload. `entryDid` is the DID exactly as addressed
 * (decoded from the path, with or without "@version").
 */
export function revocationSigningPayload(entryDid: string, reason: string): Uint8Array {
  return utf8(canonicalJson({ payloadType: REVOKE_PAYLOAD_TYPE, entryDid, reason }));
}

function canonicalJson(value: unknown): string {
  const text = canonicalize(value);
  if (text === undefined) throw new TypeError("payload cannot be canonicalized");
  return text;
}

function utf8(text: string): Uint8Array {
  return new TextEncoder().encode(text);
}
