/**
 * The fields of an entry, declared once. Everything that lists them derives from this table: the
 * stored and valid entry types, the row mapper and the create function's record, the query
 * language's columns, the structured conditions' field names, the JSON names of query results,
 * the fields a publisher must not send, the v2 signing payload and the SDK's log verifier, the
 * optional text fields' rules, and the CLI's manifest checks. Pure: no I/O.
 *
 * Adding an optional publisher field means a row here (with `since` and its `textRule`), its
 * column in a migration, and its proto field (a test holds the two in step): docs/architecture.md
 * lists the files. `registry.entry.v1` is the exception on purpose: a frozen format that never
 * gains a field (signing-payload.ts).
 */

import { VERSION_STATUSES, type VersionStatus } from "./version-state.js";

/** The signed entry payloads; a create that names none is `registry.entry.v1`, so older clients keep working. */
export const ENTRY_PAYLOAD_TYPES = ["registry.entry.v1", "registry.entry.v2"] as const;
export type EntryPayloadType = (typeof ENTRY_PAYLOAD_TYPES)[number];

/** How an optional publisher text field is checked; each rule is implemented in text-rules.ts. */
export type TextRule = "https-url" | "spdx-expression";

/** How a field's values compare in discovery, which decides the operators and literals it accepts. */
export type FieldKind = "text" | "semver" | "time" | "number" | "amount" | "tags" | "boolean" | "status" | "json" | "mark";

/** Least severe first (docs/lifecycle.md): a version's status is the most severe mark on it. */
export const ENTRY_STATUSES = VERSION_STATUSES;
export type EntryStatus = VersionStatus;

/**
 * A mark a lifecycle or moderation action set on a version, as stored and returned: its members
 * (reason, replacement, policy, note, by) and `at`, RFC 3339 text.
 */
export type MarkValue = Readonly<Record<string, string>>;

/**
 * Who sets a field: the publisher (sent and signed), the registry from the publisher's fields
 * (`derived`: not in the Entry message), or the registry on its own (`registry`: refused when a
 * publisher sends it).
 */
export type FieldSetter = "publisher" | "derived" | "registry";

export interface EntryFieldSpec {
  /** The property of a stored entry, which is also the Entry message's JSON name and the structured condition's field name. */
  readonly name: string;
  /** Its column in `entries`, which is also its name in the query language. */
  readonly column: string;
  readonly kind: FieldKind;
  readonly setBy: FieldSetter;
  /** Publisher fields a manifest must carry. */
  readonly required?: boolean;
  /** Whether discovery can select, filter and order by it (`data` is reached by its paths instead). */
  readonly queryable: boolean;
  /** Part of the signed payload (signing-payload.ts). */
  readonly signed?: boolean;
  /** The first payload version that signs it (2: `registry.entry.v2`); absent, every version does. */
  readonly since?: 2;
  /** The rule an optional publisher text field's value must pass when not empty. */
  readonly textRule?: TextRule;
  /** What a stored state written before the field existed holds for it (older log records). */
  readonly absentAs?: string;
  /** For a mark: the proto message it is carried in (registry.v1.<message>). */
  readonly message?: "Deprecation" | "Yank" | "Moderation" | "Archive";
  /** Stored as NULL when absent (revocations); absent text is stored as '' instead. */
  readonly nullable?: boolean;
  /** The column that orders a SemVer field by precedence. */
  readonly sortColumn?: string;
  /** The columns an amount ("100 USDC") is split into, to compare within one unit. */
  readonly amountColumns?: { readonly value: string; readonly unit: string };
}

export const ENTRY_FIELDS = [
  { name: "entryDid", column: "entry_did", kind: "text", setBy: "publisher", required: true, queryable: true, signed: true },
  { name: "baseDid", column: "base_did", kind: "text", setBy: "derived", queryable: false },
  { name: "entryType", column: "entry_type", kind: "text", setBy: "publisher", required: true, queryable: true, signed: true },
  { name: "name", column: "name", kind: "text", setBy: "derived", queryable: true },
  {
    name: "version",
    column: "version",
    kind: "semver",
    setBy: "publisher",
    required: true,
    queryable: true,
    signed: true,
    sortColumn: "version_key",
  },
  { name: "publisherDid", column: "publisher_did", kind: "text", setBy: "publisher", required: true, queryable: true, signed: true },
  { name: "publishedAt", column: "published_at", kind: "time", setBy: "publisher", required: true, queryable: true, signed: true },
  { name: "description", column: "description", kind: "text", setBy: "publisher", queryable: true, signed: true },
  { name: "tags", column: "tags", kind: "tags", setBy: "publisher", queryable: true, signed: true },
  { name: "data", column: "data", kind: "json", setBy: "publisher", queryable: false, signed: true },
  { name: "contentHash", column: "content_hash", kind: "text", setBy: "publisher", required: true, queryable: true, signed: true },
  {
    name: "bondAmount",
    column: "bond_amount",
    kind: "amount",
    setBy: "publisher",
    queryable: true,
    signed: true,
    amountColumns: { value: "bond_value", unit: "bond_unit" },
  },
  { name: "signature", column: "signature", kind: "text", setBy: "publisher", required: true, queryable: false },
  { name: "sequence", column: "sequence", kind: "number", setBy: "registry", queryable: true },
  { name: "status", column: "status", kind: "status", setBy: "registry", queryable: true },
  { name: "revokedAt", column: "revoked_at", kind: "time", setBy: "registry", queryable: true, nullable: true },
  { name: "revocationReason", column: "revocation_reason", kind: "text", setBy: "registry", queryable: false, nullable: true },
  { name: "isLatest", column: "is_latest", kind: "boolean", setBy: "registry", queryable: true },
  {
    name: "homepage",
    column: "homepage",
    kind: "text",
    setBy: "publisher",
    queryable: true,
    signed: true,
    since: 2,
    textRule: "https-url",
  },
  {
    name: "repository",
    column: "repository",
    kind: "text",
    setBy: "publisher",
    queryable: true,
    signed: true,
    since: 2,
    textRule: "https-url",
  },
  {
    name: "license",
    column: "license",
    kind: "text",
    setBy: "publisher",
    queryable: true,
    signed: true,
    since: 2,
    textRule: "spdx-expression",
  },
  {
    name: "payloadType",
    column: "payload_type",
    kind: "text",
    setBy: "publisher",
    queryable: true,
    signed: true,
    absentAs: "registry.entry.v1",
  },
  { name: "deprecation", column: "deprecation", kind: "mark", setBy: "registry", queryable: false, nullable: true, message: "Deprecation" },
  { name: "yank", column: "yank", kind: "mark", setBy: "registry", queryable: false, nullable: true, message: "Yank" },
  { name: "quarantine", column: "quarantine", kind: "mark", setBy: "registry", queryable: false, nullable: true, message: "Moderation" },
  { name: "removal", column: "removal", kind: "mark", setBy: "registry", queryable: false, nullable: true, message: "Moderation" },
  { name: "archive", column: "archive", kind: "mark", setBy: "registry", queryable: false, nullable: true, message: "Archive" },
  { name: "deprecated", column: "deprecated", kind: "boolean", setBy: "registry", queryable: true },
  { name: "archived", column: "archived", kind: "boolean", setBy: "registry", queryable: true },
] as const satisfies readonly EntryFieldSpec[];

export type EntryField = (typeof ENTRY_FIELDS)[number];

/** The value a field holds in a stored entry, by kind. */
interface KindValues {
  text: string;
  semver: string;
  time: Date;
  number: bigint;
  amount: string;
  tags: readonly string[];
  boolean: boolean;
  status: EntryStatus;
  json: Record<string, unknown>;
  mark: MarkValue;
}

type FieldValue<F extends EntryField> = KindValues[F["kind"]] | (F extends { readonly nullable: true } ? null : never);

/** The fields some setters set, as the properties of an entry. */
export type EntryFieldsSetBy<S extends FieldSetter> = {
  readonly [F in EntryField as F["setBy"] extends S ? F["name"] : never]: FieldValue<F>;
};

/** What a publisher's entry holds once validated and normalised: its fields and those derived from them. */
export type PublishedFields = EntryFieldsSetBy<"publisher" | "derived">;

/** What the registry assigns when it stores an entry, and changes later (revocation, latest). */
export type RegistryAssignedFields = EntryFieldsSetBy<"registry">;

/** A publisher field as a request carries it: times as RFC 3339 text. */
export type EntryInputFields = {
  [F in EntryField as F["setBy"] extends "publisher" ? F["name"] : never]?: F["kind"] extends "time" ? string : KindValues[F["kind"]];
};

export const PUBLISHER_FIELDS: readonly EntryField[] = ENTRY_FIELDS.filter((field) => field.setBy === "publisher");
export const REGISTRY_FIELDS: readonly EntryField[] = ENTRY_FIELDS.filter((field) => field.setBy === "registry");
/** The fields of the Entry message: every field but those derived for storage. */
export const MESSAGE_FIELDS: readonly EntryField[] = ENTRY_FIELDS.filter((field) => field.setBy !== "derived");
/** The fields discovery and the query language reach; a mark never is (its boolean is). */
export type QueryableField = Extract<EntryField, { readonly queryable: true }>;
export const QUERYABLE_FIELDS: readonly QueryableField[] = ENTRY_FIELDS.filter((field): field is QueryableField => field.queryable);

const byColumn = new Map<string, EntryField>(ENTRY_FIELDS.map((field) => [field.column, field]));

/** The field stored in `column`, queryable or not. */
export function fieldByColumn(column: string): EntryField | undefined {
  return byColumn.get(column);
}

/** The field's spec, widened: the optional parts of a spec are read through this. */
export function fieldSpec(field: EntryField): EntryFieldSpec {
  return field;
}
