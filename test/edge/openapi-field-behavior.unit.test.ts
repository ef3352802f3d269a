import { describe, expect, it } from "vitest";
import { EntrySchema } from "../../gen/registry/v1/entry_pb.js";
import { ENTRY_FIELDS, REGISTRY_FIELDS } from "../../src/domain/entry-fields.js";
import { isOutputOnly, isRequiredInRequests } from "../../src/edge/openapi/field-behavior.js";

/**
 * The OpenAPI document reads `required` and `readOnly` from the protos' field_behavior
 * annotations. These hold them to what the server does: the entry field catalogue says which
 * fields a create must carry and which the registry alone sets.
 */

describe("the Entry message's field_behavior annotations", () => {
  it("mark OUTPUT_ONLY exactly the fields the registry sets", () => {
    const outputOnly = EntrySchema.fields.filter(isOutputOnly).map((field) => field.jsonName);
    expect(outputOnly.sort()).toEqual(REGISTRY_FIELDS.map((field) => field.name).sort());
  });

  it("mark REQUIRED exactly the publisher fields a create must carry", () => {
    const required = EntrySchema.fields.filter(isRequiredInRequests).map((field) => field.jsonName);
    const fromCatalogue = ENTRY_FIELDS.filter((field) => field.setBy === "publisher" && "required" in field && field.required);
    expect(required.sort()).toEqual(fromCatalogue.map((field) => field.name).sort());
  });
});
