import { createRegistry, ScalarType } from "@bufbuild/protobuf";
import { describe, expect, it } from "vitest";
import { file_auth_v1_admin_service } from "../../gen/auth/v1/admin_service_pb.js";
import { file_auth_v1_token_service } from "../../gen/auth/v1/token_service_pb.js";
import { file_registry_v1_change_feed_service } from "../../gen/registry/v1/change_feed_service_pb.js";
import { EntrySchema, file_registry_v1_entry } from "../../gen/registry/v1/entry_pb.js";
import { file_registry_v1_registry_service } from "../../gen/registry/v1/registry_service_pb.js";
import { file_registry_v1_transparency_log_service } from "../../gen/registry/v1/transparency_log_service_pb.js";
import { ENTRY_FIELDS, REGISTRY_FIELDS } from "../../src/domain/entry-fields.js";
import { isOutputOnly, isRequiredInRequests } from "../../src/edge/openapi/field-behavior.js";
import { FIELD_VALUES } from "../../src/edge/openapi/field-values.js";

/**
 * The OpenAPI document reads `required` and `readOnly` from the protos' field_behavior
 * annotations, and enums from FIELD_VALUES. These hold both to what the server does: the entry
 * field catalogue says which fields a create must carry and which the registry alone sets.
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

describe("the fields documented as enums", () => {
  const registry = createRegistry(
    file_registry_v1_entry,
    file_registry_v1_registry_service,
    file_registry_v1_change_feed_service,
    file_registry_v1_transparency_log_service,
    file_auth_v1_token_service,
    file_auth_v1_admin_service,
  );

  it("each name a string field of the API, with a set of distinct values", () => {
    expect(Object.keys(FIELD_VALUES).length).toBeGreaterThan(0);
    for (const [fullName, values] of Object.entries(FIELD_VALUES)) {
      const dot = fullName.lastIndexOf(".");
      const field = registry.getMessage(fullName.slice(0, dot))?.fields.find((candidate) => candidate.name === fullName.slice(dot + 1));
      expect(field, fullName).toBeDefined();
      expect(field?.fieldKind === "scalar" && field.scalar === ScalarType.STRING, fullName).toBe(true);
      expect(new Set(values).size, fullName).toBe(values.length);
      expect(values.length, fullName).toBeGreaterThan(1);
    }
  });
});
