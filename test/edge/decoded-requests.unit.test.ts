import { create, toBinary } from "@bufbuild/protobuf";
import { describe, expect, it } from "vitest";
import { ResolveEntryRequestSchema } from "../../gen/registry/v1/registry_service_pb.js";
import { createDecodedRequests, DECODED_REQUEST_KEY_MAX } from "../../src/edge/decoded-requests.js";
import { createRegistryMessageCodec } from "../../src/edge/rpc/message-codec.js";
import { deepFreeze } from "../../src/domain/deep-freeze.js";

describe("requests decoded once", () => {
  it("keeps what it is given, frozen, and answers it for the same key", () => {
    const decoded = createDecodedRequests<{ did: string }>(deepFreeze);
    const kept = decoded.keep("k", { did: "a" });
    expect(decoded.get("k")).toBe(kept);
    expect(() => {
      (kept as { did: string }).did = "b";
    }).toThrow(TypeError);
  });

  it("drops the oldest past its bound, and never keeps an overlong key", () => {
    const decoded = createDecodedRequests<{ n: number }>(deepFreeze, 2);
    decoded.keep("one", { n: 1 });
    decoded.keep("two", { n: 2 });
    decoded.keep("three", { n: 3 });
    expect(decoded.get("one")).toBeUndefined();
    expect(decoded.get("two")?.n).toBe(2);
    expect(decoded.get("three")?.n).toBe(3);
    const long = "x".repeat(DECODED_REQUEST_KEY_MAX + 1);
    expect(decoded.keep(long, { n: 4 }).n).toBe(4);
    expect(decoded.get(long)).toBeUndefined();
  });

  it("the codec shares one frozen message per body for the repeated schemas only", () => {
    const codec = createRegistryMessageCodec([ResolveEntryRequestSchema]);
    const bytes = toBinary(ResolveEntryRequestSchema, create(ResolveEntryRequestSchema, { did: "did:reg:main:skill:a@1.0.0" }));
    const first = codec.readBinary(ResolveEntryRequestSchema, bytes);
    // A copy of the bytes, as the next request's body would be: the same message comes back.
    expect(codec.readBinary(ResolveEntryRequestSchema, Uint8Array.from(bytes))).toBe(first);
    expect(Object.isFrozen(first)).toBe(true);
    const json = new TextEncoder().encode('{"did":"did:reg:main:skill:a@1.0.0"}');
    expect(codec.readJson(ResolveEntryRequestSchema, json)).not.toBe(first);
    expect(codec.readJson(ResolveEntryRequestSchema, json)).toBe(codec.readJson(ResolveEntryRequestSchema, json));
    const unshared = createRegistryMessageCodec([]);
    expect(unshared.readBinary(ResolveEntryRequestSchema, bytes)).not.toBe(unshared.readBinary(ResolveEntryRequestSchema, bytes));
  });

  it("a body that fails to decode is refused every time, not kept", () => {
    const codec = createRegistryMessageCodec([ResolveEntryRequestSchema]);
    const bad = new TextEncoder().encode('{"did":1}');
    expect(() => codec.readJson(ResolveEntryRequestSchema, bad)).toThrow(/did|ResolveEntryRequest/);
    expect(() => codec.readJson(ResolveEntryRequestSchema, bad)).toThrow(/did|ResolveEntryRequest/);
  });
});
