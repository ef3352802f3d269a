import { create, toBinary, type DescMessage, type JsonObject, type JsonValue, type Message } from "@bufbuild/protobuf";
import { ValueSchema } from "@bufbuild/protobuf/wkt";
import { describe, expect, it } from "vitest";
import { StatusSchema } from "../../gen/google/rpc/status_pb.js";
import { encodeBinary, writesDirectly } from "../../src/transport/fast-binary.js";
import { seededRandom } from "../support/seeded-random.js";
import { ChangeSchema, ListChangesResponseSchema } from "../../gen/registry/v1/change_feed_service_pb.js";
import { EntrySchema, EntryVersionSchema } from "../../gen/registry/v1/entry_pb.js";
import { CreateEntryResponseSchema, ResolveEntryResponseSchema } from "../../gen/registry/v1/registry_service_pb.js";

/**
 * The direct binary writer must produce protobuf-es's bytes exactly, for every message it accepts:
 * checked here over generated messages whose strings, numbers, optional fields and JSON data
 * reach the edges (empty, non-ASCII, lone surrogates, -0, huge and negative numbers, deep nesting).
 */

const PIECES = ["", "a", "web-search", "é", "日本語", "🦀", "\u0000", "\ud800", "line\nbreak", "x".repeat(200), '"quoted"', "1"];
const NUMBERS = [0, -0, 1, -1, 0.5, 1e308, -1e-308, 2 ** 53, -(2 ** 31), 123456.789];

function pick<T>(next: () => number, items: readonly T[]): T {
  return items[Math.floor(next() * items.length)] as T;
}

function text(next: () => number): string {
  let out = "";
  const parts = Math.floor(next() * 4);
  for (let i = 0; i < parts; i += 1) out += pick(next, PIECES);
  return out;
}

function jsonValue(next: () => number, depth: number): JsonValue {
  const kind = Math.floor(next() * (depth > 3 ? 4 : 6));
  switch (kind) {
    case 0:
      return null;
    case 1:
      return pick(next, NUMBERS);
    case 2:
      return text(next);
    case 3:
      return next() < 0.5;
    case 4:
      return Array.from({ length: Math.floor(next() * 4) }, () => jsonValue(next, depth + 1));
    default:
      return jsonObject(next, depth + 1);
  }
}

function jsonObject(next: () => number, depth: number): JsonObject {
  const object: JsonObject = {};
  const size = Math.floor(next() * 5);
  // Integer-like keys come first in a JS object's key order, whatever the insertion order.
  for (let i = 0; i < size; i += 1) object[pick(next, ["name", "2", "10", "ключ", "", "a.b", `k${i}`])] = jsonValue(next, depth);
  return object;
}

function entry(next: () => number): Message {
  const sequence = pick(next, [0n, 1n, 127n, 128n, 2n ** 62n, -1n, 12345n]);
  return create(EntrySchema, {
    entryDid: text(next),
    entryType: pick(next, ["skill", "agent", ""]),
    version: text(next),
    publisherDid: text(next),
    publishedAt: text(next),
    description: text(next),
    tags: Array.from({ length: Math.floor(next() * 4) }, () => text(next)),
    ...(next() < 0.8 ? { data: jsonObject(next, 0) } : {}),
    contentHash: text(next),
    bondAmount: text(next),
    signature: text(next),
    sequence,
    status: pick(next, ["active", "revoked", ""]),
    ...(next() < 0.5 ? { revokedAt: pick(next, ["", "2026-11-24T10:00:00Z"]) } : {}),
    ...(next() < 0.5 ? { revocationReason: text(next) } : {}),
    isLatest: next() < 0.5,
    homepage: text(next),
    payloadType: pick(next, ["registry.entry.v1", "registry.entry.v2", ""]),
    ...(next() < 0.3 ? { deprecation: { reason: text(next), replacement: text(next), at: text(next), by: text(next) } } : {}),
    ...(next() < 0.3 ? { yank: { reason: text(next), at: text(next), by: text(next) } } : {}),
    ...(next() < 0.2 ? { removal: { policy: "malware", note: text(next), at: text(next), by: text(next) } } : {}),
    deprecated: next() < 0.3,
    archived: next() < 0.2,
  });
}

function expectSameBytes(schema: DescMessage, message: Message, seed: number): void {
  expect(writesDirectly(schema), `${schema.typeName} is written directly`).toBe(true);
  const ours = Buffer.from(encodeBinary(schema, message));
  const theirs = Buffer.from(toBinary(schema, message as never));
  if (!ours.equals(theirs)) expect({ seed, ours: ours.toString("hex") }).toEqual({ seed, ours: theirs.toString("hex") });
}

describe("the direct binary writer", () => {
  it("writes protobuf-es's bytes for 3,000 generated entries", () => {
    for (let seed = 1; seed <= 3_000; seed += 1) expectSameBytes(EntrySchema, entry(seededRandom(seed)), seed);
  });

  it("writes protobuf-es's bytes for the answers that wrap an entry, and for version summaries", () => {
    for (let seed = 1; seed <= 300; seed += 1) {
      const next = seededRandom(seed);
      expectSameBytes(ResolveEntryResponseSchema, create(ResolveEntryResponseSchema, { entry: entry(next) as never }), seed);
      expectSameBytes(CreateEntryResponseSchema, create(CreateEntryResponseSchema, { entry: entry(next) as never }), seed);
      expectSameBytes(
        ChangeSchema,
        create(ChangeSchema, {
          index: BigInt(seed),
          kind: text(next),
          entry: entry(next) as never,
          latestVersion: text(next),
          loggedAt: text(next),
        }),
        seed,
      );
      expectSameBytes(
        ChangeSchema,
        create(ChangeSchema, {
          index: BigInt(seed),
          kind: "entry.lifecycle",
          entries: Array.from({ length: Math.floor(next() * 3) }, () => entry(next)) as never,
          request: jsonObject(next, 0),
          latestVersion: text(next),
          loggedAt: text(next),
        }),
        seed,
      );
      expectSameBytes(
        EntryVersionSchema,
        create(EntryVersionSchema, {
          version: text(next),
          entryDid: text(next),
          status: text(next),
          publishedAt: text(next),
          sequence: BigInt(seed),
          deprecated: next() < 0.5,
          yanked: next() < 0.5,
        }),
        seed,
      );
    }
  });

  it("writes a Struct's values of every kind, nested", () => {
    const data = {
      n: null,
      d: -0,
      big: 1e308,
      s: "日本語🦀",
      t: true,
      f: false,
      list: [1, "two", [null, { deep: [] }]],
      o: { "10": 1, "2": 2, b: {} },
    };
    expectSameBytes(EntrySchema, create(EntrySchema, { data }), 0);
    expectSameBytes(EntrySchema, create(EntrySchema, { data: {} }), 0);
  });

  it("writes repeated messages: a feed page of every kind of change", () => {
    for (let seed = 1; seed <= 100; seed += 1) {
      const next = seededRandom(seed);
      const changes = Array.from({ length: Math.floor(next() * 4) }, (_, i) =>
        create(ChangeSchema, {
          index: BigInt(i),
          kind: "entry.moderation",
          entries: [entry(next)] as never,
          request: jsonObject(next, 0),
          loggedAt: text(next),
        }),
      );
      expectSameBytes(ListChangesResponseSchema, create(ListChangesResponseSchema, { changes, size: BigInt(seed) } as never), seed);
    }
  });

  it("leaves to protobuf-es the shapes it does not write, and fields it does not know", () => {
    expect(writesDirectly(ValueSchema)).toBe(false); // a oneof
    expect(writesDirectly(StatusSchema)).toBe(false); // bytes, inside its repeated Any
    const withUnknown = { ...create(EntrySchema, { version: "1.0.0" }), $unknown: [{ no: 99, wireType: 0, data: new Uint8Array([1]) }] };
    expect(Buffer.from(encodeBinary(EntrySchema, withUnknown as Message))).toEqual(
      Buffer.from(toBinary(EntrySchema, withUnknown as never)),
    );
  });
});
