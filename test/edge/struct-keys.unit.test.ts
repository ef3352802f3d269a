import { describe, expect, it } from "vitest";
import { fromBinary, toBinary, create } from "@bufbuild/protobuf";
import { BinaryWriter, WireType } from "@bufbuild/protobuf/wire";
import { ValueSchema } from "@bufbuild/protobuf/wkt";
import { findProtoKeyInJson, findProtoKeyInWire } from "../../src/edge/struct-keys.js";
import {
  CreateEntryRequestSchema,
  DiscoverEntriesRequestSchema,
  ResolveEntryRequestSchema,
} from "../../gen/registry/v1/registry_service_pb.js";
import { encodedRequest, objectWithKeys } from "../abuse/abuse-transports.js";

describe("findProtoKeyInJson", () => {
  it("finds an own __proto__ key as JSON.parse makes it, with its path from the root", () => {
    expect(findProtoKeyInJson(JSON.parse('{"__proto__": 1}'))).toBe("__proto__");
    expect(findProtoKeyInJson(JSON.parse('{"entry": {"data": {"a": {"__proto__": {}}}}}'))).toBe("entry.data.a.__proto__");
    expect(findProtoKeyInJson(JSON.parse('{"conditions": [{}, {"value": {"x": [1, {"__proto__": 2}]}}]}'))).toBe(
      "conditions[1].value.x[1].__proto__",
    );
    expect(findProtoKeyInJson(JSON.parse('[{"a b": {"__proto__": null}}]'))).toBe('[0]["a b"].__proto__');
  });

  it("reports the first in document order", () => {
    expect(findProtoKeyInJson(JSON.parse('{"a": {"b": {"__proto__": 1}}, "c": {"__proto__": 2}}'))).toBe("a.b.__proto__");
  });

  it("finds nothing where there is no such key", () => {
    for (const text of [
      '{"constructor": {"prototype": 1}}',
      '{"a": "__proto__"}',
      '["__proto__"]',
      "null",
      '"x"',
      "1e400",
      '{"__proto": 1, "proto__": 2}',
    ]) {
      expect(findProtoKeyInJson(JSON.parse(text)), text).toBeUndefined();
    }
  });

  it("sees own keys only: an object literal's __proto__ sets the prototype and is no key", () => {
    expect(findProtoKeyInJson({ __proto__: { a: 1 } })).toBeUndefined();
    expect(findProtoKeyInJson(objectWithKeys([["__proto__", 1]]))).toBe("__proto__");
  });

  it("walks nesting far deeper than the call stack", () => {
    const depth = 200_000;
    const deep = JSON.parse(`${'{"a":['.repeat(depth)}{"__proto__":1}${"]}".repeat(depth)}`);
    expect(findProtoKeyInJson(deep)).toMatch(/^a\[0\]\.a\[0\]\..*\.__proto__$/);
  });
});

/** The key as protobuf-es reads it back: gone, which is why the bytes are looked at first. */
function decodedDataKeys(bytes: Uint8Array): string[] {
  return Object.keys(fromBinary(CreateEntryRequestSchema, bytes).entry?.data ?? {});
}

describe("findProtoKeyInWire", () => {
  it("finds a __proto__ key of entry.data, which protobuf-es's decoder drops", () => {
    const bytes = encodedRequest(CreateEntryRequestSchema, {
      entry: {
        data: objectWithKeys([
          ["license", "MIT"],
          ["__proto__", "x"],
        ]),
      },
    });
    expect(decodedDataKeys(bytes)).toEqual(["license"]);
    expect(findProtoKeyInWire(CreateEntryRequestSchema, bytes)).toBe("entry.data.__proto__");
  });

  it("names keys inside nested structs and lists as the JSON form does", () => {
    const nested = encodedRequest(CreateEntryRequestSchema, {
      entry: { data: { a: { b: [1, "x", objectWithKeys([["__proto__", true]])] } } },
    });
    expect(findProtoKeyInWire(CreateEntryRequestSchema, nested)).toBe("entry.data.a.b[2].__proto__");
    const weirdKey = encodedRequest(CreateEntryRequestSchema, { entry: { data: { "a b": objectWithKeys([["__proto__", 1]]) } } });
    expect(findProtoKeyInWire(CreateEntryRequestSchema, weirdKey)).toBe('entry.data["a b"].__proto__');
  });

  it("finds keys in a repeated message field's elements, by index", () => {
    const bytes = encodedRequest(DiscoverEntriesRequestSchema, {
      conditions: [
        { field: "name", op: "=", value: "x" },
        { field: "data.a", op: "=", value: { ok: [objectWithKeys([["__proto__", 1]])] } },
      ],
    });
    expect(findProtoKeyInWire(DiscoverEntriesRequestSchema, bytes)).toBe("conditions[1].value.ok[0].__proto__");
  });

  it("finds nothing in requests without such a key, wherever else the text appears", () => {
    const cases = [
      [
        CreateEntryRequestSchema,
        { entry: { description: "__proto__", tags: ["__proto__"], data: { a: "__proto__", b: ["__proto__"], constructor: 1 } } },
      ],
      [DiscoverEntriesRequestSchema, { entryType: "__proto__", conditions: [{ field: "__proto__", op: "=", value: "__proto__" }] }],
      [ResolveEntryRequestSchema, { did: "__proto__" }],
    ] as const;
    for (const [schema, value] of cases) expect(findProtoKeyInWire(schema, encodedRequest(schema, value as never))).toBeUndefined();
  });

  it("decides on the key a map entry ends with, as the decoder does when a key field repeats", () => {
    const entry = (keys: string[]) => {
      const writer = new BinaryWriter();
      for (const key of keys) writer.tag(1, WireType.LengthDelimited).string(key);
      writer
        .tag(2, WireType.LengthDelimited)
        .bytes(toBinary(ValueSchema, create(ValueSchema, { kind: { case: "numberValue", value: 1 } })));
      return new BinaryWriter().tag(1, WireType.LengthDelimited).bytes(writer.finish()).finish();
    };
    const request = (structBytes: Uint8Array) =>
      new BinaryWriter()
        .tag(1, WireType.LengthDelimited)
        .bytes(new BinaryWriter().tag(8, WireType.LengthDelimited).bytes(structBytes).finish())
        .finish();
    const replaced = request(entry(["__proto__", "kept"]));
    expect(decodedDataKeys(replaced)).toEqual(["kept"]);
    expect(findProtoKeyInWire(CreateEntryRequestSchema, replaced)).toBeUndefined();
    const lost = request(entry(["kept", "__proto__"]));
    expect(decodedDataKeys(lost)).toEqual([]);
    expect(findProtoKeyInWire(CreateEntryRequestSchema, lost)).toBe("entry.data.__proto__");
  });

  it("leaves bytes that are not a message to the decoder", () => {
    const bytes = encodedRequest(CreateEntryRequestSchema, { entry: { data: objectWithKeys([["__proto__", "x"]]) } });
    const truncated = bytes.subarray(0, bytes.length - 3);
    expect(() => fromBinary(CreateEntryRequestSchema, truncated)).toThrow();
    expect(findProtoKeyInWire(CreateEntryRequestSchema, truncated)).toBeUndefined();
    expect(findProtoKeyInWire(CreateEntryRequestSchema, new Uint8Array([0xff, 0xff, 0xff]))).toBeUndefined();
  });

  it("stops where the decoder's nesting limit stops it", () => {
    const field = (no: number, bytes: Uint8Array) => new BinaryWriter().tag(no, WireType.LengthDelimited).bytes(bytes).finish();
    const structEntry = (key: string, value: Uint8Array) =>
      field(1, new BinaryWriter().tag(1, WireType.LengthDelimited).string(key).raw(field(2, value)).finish());
    // Struct{__proto__: 1}, then 150 times Struct{a: Value{struct_value: ...}}.
    let struct = structEntry("__proto__", toBinary(ValueSchema, create(ValueSchema, { kind: { case: "numberValue", value: 1 } })));
    for (let level = 0; level < 150; level++) struct = structEntry("a", field(5, struct));
    const deep = field(1, field(8, struct));
    expect(() => fromBinary(CreateEntryRequestSchema, deep)).toThrow(/recursion/);
    expect(findProtoKeyInWire(CreateEntryRequestSchema, deep)).toBeUndefined();
    // Within the limit the same shape is found.
    let shallow = structEntry("__proto__", toBinary(ValueSchema, create(ValueSchema, { kind: { case: "nullValue", value: 0 } })));
    for (let level = 0; level < 20; level++) shallow = structEntry("a", field(5, shallow));
    expect(findProtoKeyInWire(CreateEntryRequestSchema, field(1, field(8, shallow)))).toBe(`entry.data${".a".repeat(20)}.__proto__`);
  });
});
