import { describe, expect, it } from "vitest";
import { ScalarType } from "@bufbuild/protobuf";
import { EntrySchema } from "../../gen/registry/v1/entry_pb.js";
import { ENTRY_FIELDS, type FieldKind, fieldSpec, MESSAGE_FIELDS } from "../../src/domain/entry-fields.js";
import { checkQuery } from "../../src/discovery/query-language/columns.js";
import { parseQuery } from "../../src/discovery/query-language/parser.js";
import { entrySigningPayload, UnsignedFieldError, type EntrySigningFields } from "../../src/domain/signing-payload.js";
import { structuredQuery } from "../../src/discovery/structured-conditions.js";

/**
 * The field catalogue is the one list of an entry's fields; these tests hold the places that
 * cannot derive from it (the proto, which is the API's source of truth, and the signed payload,
 * a versioned format) to the same list.
 */

/** The proto shape each kind is carried in. */
const PROTO_SHAPE: Readonly<Record<Exclude<FieldKind, "mark">, string>> = {
  text: "string",
  semver: "string",
  time: "string",
  amount: "string",
  status: "string",
  number: "int64",
  boolean: "bool",
  tags: "repeated string",
  json: "google.protobuf.Struct",
};

function protoShape(field: (typeof EntrySchema.fields)[number]): string {
  if (field.fieldKind === "list") return `repeated ${field.scalar === ScalarType.STRING ? "string" : "?"}`;
  if (field.fieldKind === "message") return field.message.typeName;
  if (field.fieldKind !== "scalar") return field.fieldKind;
  return (
    ({ [ScalarType.STRING]: "string", [ScalarType.INT64]: "int64", [ScalarType.BOOL]: "bool" } as Record<number, string>)[field.scalar] ??
    "?"
  );
}

/** What structured discovery says about a condition on `name`, if it refuses the field itself (its value may be wrong). */
function conditionFieldProblem(name: string): string | undefined {
  try {
    structuredQuery({ entryType: "", conditions: [{ field: name, op: "=", value: "x" }] });
    return undefined;
  } catch (error) {
    const message = (error as Error).message;
    return message.includes("conditions[0].field") ? message : undefined;
  }
}

describe("the field catalogue", () => {
  it("names every field of the Entry message, with its JSON name, shape and presence", () => {
    const fromProto = EntrySchema.fields.map((field) => ({
      name: field.jsonName,
      shape: protoShape(field),
      // A registry message (a mark) has presence of its own; Struct (data) is never absent.
      nullable: field.proto.proto3Optional === true || (field.fieldKind === "message" && field.message.typeName.startsWith("registry.v1.")),
    }));
    const fromCatalogue = MESSAGE_FIELDS.map((field) => ({
      name: field.name,
      shape: field.kind === "mark" ? `registry.v1.${fieldSpec(field).message}` : PROTO_SHAPE[field.kind],
      nullable: fieldSpec(field).nullable === true,
    }));
    expect(fromCatalogue).toEqual(fromProto);
  });

  const required = {
    entryDid: "did:reg:main:skill:a@1.0.0",
    entryType: "skill",
    version: "1.0.0",
    publisherDid: "did:key:z6Mk",
    publishedAt: "2026-01-01T00:00:00Z",
    contentHash: `sha256:${"0".repeat(64)}`,
  };
  const everyOptional = {
    description: "d",
    tags: ["t"],
    data: { k: 1 },
    bondAmount: "1 USDC",
    homepage: "https://example.com",
    repository: "https://example.com/git",
    license: "MIT",
  };
  const signedNames = ENTRY_FIELDS.filter((field) => fieldSpec(field).signed === true).map((field) => field.name);
  const payloadKeys = (fields: EntrySigningFields) =>
    Object.keys(JSON.parse(new TextDecoder().decode(entrySigningPayload(fields))) as object).sort();

  it("signs, in v1, exactly the fields it always signed: a frozen format", () => {
    const v1Names = ENTRY_FIELDS.filter((field) => fieldSpec(field).signed === true && fieldSpec(field).since === undefined).map(
      (field) => field.name,
    );
    expect(payloadKeys(required)).toEqual([...v1Names].sort());
    expect(v1Names.sort()).toEqual(
      [
        "payloadType",
        "entryDid",
        "entryType",
        "version",
        "publisherDid",
        "publishedAt",
        "description",
        "tags",
        "data",
        "contentHash",
        "bondAmount",
      ].sort(),
    );
  });

  it("signs, in v2, every field marked signed that is set, and leaves out the empty ones", () => {
    expect(payloadKeys({ ...required, ...everyOptional, payloadType: "registry.entry.v2" })).toEqual([...signedNames].sort());
    const empty = { description: "", tags: [], data: {}, bondAmount: "", homepage: "", repository: "", license: "" };
    expect(payloadKeys({ ...required, ...empty, payloadType: "registry.entry.v2" })).toEqual(
      ["payloadType", ...Object.keys(required)].sort(),
    );
  });

  it("refuses to build a v1 payload for an entry that sets a field v1 does not sign", () => {
    for (const field of ["homepage", "repository", "license"] as const) {
      expect(() => entrySigningPayload({ ...required, [field]: everyOptional[field] })).toThrow(UnsignedFieldError);
    }
  });

  it("lets discovery query exactly the queryable fields, by column in the query language and by name in conditions", () => {
    for (const field of ENTRY_FIELDS) {
      const byColumn = () => checkQuery(parseQuery(`SELECT ${field.column} FROM entries`));
      if (field.queryable) {
        expect(byColumn, field.column).not.toThrow();
        expect(conditionFieldProblem(field.name), field.name).toBeUndefined();
      } else {
        expect(byColumn, field.column).toThrow(`unknown column '${field.column}'`);
        expect(conditionFieldProblem(field.name), field.name).toMatch(/conditions\[0\]\.field/);
      }
    }
    // Product rules the catalogue must keep: a signature is no search key; revocation time is.
    expect(() => checkQuery(parseQuery("SELECT * FROM entries WHERE signature = 'x'"))).toThrow("unknown column 'signature'");
    expect(() => checkQuery(parseQuery("SELECT * FROM entries WHERE revoked_at IS NULL"))).not.toThrow();
    expect(conditionFieldProblem("revokedAt")).toBeUndefined();
  });

  it("declares each column and name once", () => {
    const columns = ENTRY_FIELDS.map((field) => field.column);
    const names = ENTRY_FIELDS.map((field) => field.name);
    expect(new Set(columns).size).toBe(columns.length);
    expect(new Set(names).size).toBe(names.length);
  });
});
