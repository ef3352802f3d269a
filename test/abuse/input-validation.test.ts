import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startPublishingRegistry, type PublishingSetup, type TestPublisher, type TestRegistry } from "../support/registry-fixture.js";
import { registryClient, type CallResult, type Protocol } from "../support/protocol-clients.js";
import { BASE_POINT_SIGNATURE } from "../support/signature-vectors.js";
import {
  BINARY_TRANSPORTS,
  JSON_TRANSPORTS,
  NumberText,
  objectWithKeys,
  sendAbuse,
  TRANSPORTS,
  type AbuseCall,
  type AbuseValue,
  type Transport,
} from "./abuse-transports.js";

/**
 * Client input that the database or the JSON machinery cannot take as sent must be refused as
 * invalid_argument naming the field, before anything is stored or signed over; never answered as
 * unavailable or internal. One table row per input; each runs on every transport that can carry
 * it, and after each refused write the entry is looked up to show nothing was stored.
 *
 * To add a case, add a row: `call` builds the request for a fresh entry name, `field` is the
 * field the google.rpc.BadRequest detail must name, `on` limits the transports when the input
 * cannot travel on some (unpaired surrogates have no UTF-8 form, so protobuf binary cannot carry
 * them; JSON has no NaN).
 */

let setup: PublishingSetup;
let registry: TestRegistry;
let publisher: TestPublisher;
let token: string;

beforeAll(async () => {
  setup = await startPublishingRegistry(["registry.publish.skill"]);
  ({ registry, publisher, token } = setup);
});
afterAll(async () => {
  await setup?.close();
});

interface InputCase {
  readonly input: string;
  readonly field: string;
  /** A further text the message must contain. */
  readonly says?: string;
  readonly on?: readonly Transport[];
  readonly call: (name: string) => Promise<AbuseCall>;
}

/** A well-formed signature that verifies nothing, for entries the SDK cannot sign (it refuses NaN and Infinity). */
const UNVERIFIABLE_SIGNATURE = BASE_POINT_SIGNATURE;

/**
 * A create of entry `name` with `fields` replaced, signed over exactly those fields when the SDK
 * can sign them, so that the input under test is the entry's only fault.
 */
async function create(name: string, fields: Record<string, AbuseValue>): Promise<AbuseCall> {
  const signed = await publisher
    .entry(name, "1.0.0", plainFields(fields))
    .catch(async () => ({ ...(await publisher.entry(name, "1.0.0")), signature: UNVERIFIABLE_SIGNATURE }));
  return { method: "CreateEntry", entry: { ...signed, ...fields }, token };
}

function plainFields(fields: Record<string, AbuseValue>): Record<string, unknown> {
  const plain = (value: AbuseValue): unknown => {
    if (value instanceof NumberText) return Number(value.text);
    if (value === null || typeof value !== "object") return value;
    if (Array.isArray(value)) return value.map(plain);
    return objectWithKeys(Object.keys(value).map((key) => [key, plain(value[key]!) as AbuseValue]));
  };
  return Object.fromEntries(Object.entries(fields).map(([key, value]) => [key, plain(value)]));
}

/** A revocation of a freshly published entry, with this reason, signed over it. */
async function revoke(name: string, reason: string): Promise<AbuseCall> {
  const entry = await publisher.entry(name, "1.0.0");
  const created = await registryClient("rest", registry.url).create(entry, token);
  expect(created.code).toBe("ok");
  const revocation = await publisher.revocation(entry.entryDid, reason);
  return { method: "RevokeEntry", did: entry.entryDid, reason, signature: revocation.signature, token };
}

const discover = (body: AbuseValue) => async (): Promise<AbuseCall> => ({ method: "DiscoverEntries", body });
const condition = (field: string, op: string, value: AbuseValue) => discover({ conditions: [{ field, op, value }] });
const query = (text: string) => async (): Promise<AbuseCall> => ({ method: "QueryEntries", body: { query: text } });

const LONE_HIGH = "\ud800";
const LONE_LOW = "\udfff";

const CASES: readonly InputCase[] = [
  // Text Postgres cannot store: NUL, and unpaired surrogates (which would be stored as U+FFFD, not as signed).
  { input: "NUL in description", field: "description", call: (n) => create(n, { description: "before\u0000after" }) },
  // protobuf-es's JSON reader refuses unpaired surrogates in string fields itself, naming the body
  // and the field in the message; the rules refuse them too, should a reader ever let one through.
  {
    input: "an unpaired surrogate in description",
    field: "body",
    says: "Entry.description",
    on: JSON_TRANSPORTS,
    call: (n) => create(n, { description: `a${LONE_HIGH}b` }),
  },
  { input: "NUL in a nested data value", field: "data.a.b", call: (n) => create(n, { data: { a: { b: "x\u0000y" } } }) },
  { input: "NUL in a data key", field: 'data["a\\u0000"]', call: (n) => create(n, { data: { "a\u0000": 1 } }) },
  { input: "NUL in a data array item", field: "data.list[1]", call: (n) => create(n, { data: { list: ["ok", "x\u0000"] } }) },
  {
    input: "an unpaired high surrogate in a data value",
    field: "data.a",
    on: JSON_TRANSPORTS,
    call: (n) => create(n, { data: { a: LONE_HIGH } }),
  },
  {
    input: "an unpaired low surrogate deep in data",
    field: "data.a[0].b",
    on: JSON_TRANSPORTS,
    call: (n) => create(n, { data: { a: [{ b: `x${LONE_LOW}y` }] } }),
  },
  {
    input: "an unpaired surrogate in a data key",
    field: 'data["\\udc00"]',
    on: JSON_TRANSPORTS,
    call: (n) => create(n, { data: { "\udc00": 1 } }),
  },
  { input: "NUL in a tag", field: "tags[0]", call: (n) => create(n, { tags: ["a\u0000"] }) },
  { input: "NUL in the revocation reason", field: "reason", call: (n) => revoke(n, "bad\u0000reason") },
  {
    input: "an unpaired surrogate in the revocation reason",
    field: "body",
    says: "RevokeEntryRequest.reason",
    on: JSON_TRANSPORTS,
    call: (n) => revoke(n, `bad${LONE_HIGH}`),
  },
  // Numbers JSON cannot hold: 1e400 reads as Infinity; binary doubles carry NaN and Infinity.
  { input: "1e400 in data", field: "data.n", call: (n) => create(n, { data: { n: new NumberText("1e400") } }) },
  { input: "-1e400 in a data list", field: "data.list[0]", call: (n) => create(n, { data: { list: [new NumberText("-1e400")] } }) },
  { input: "NaN in data", field: "data.n", on: BINARY_TRANSPORTS, call: (n) => create(n, { data: { n: NaN } }) },
  // "__proto__" keys, which protobuf-es's readers drop (they assign keys, and that key sets the
  // prototype). The protocol edge finds them first, in the parsed JSON or the wire bytes, and names
  // them from the request's root.
  {
    input: "a __proto__ key in data",
    field: "entry.data.__proto__",
    call: (n) =>
      create(n, {
        data: objectWithKeys([
          ["__proto__", "x"],
          ["license", "MIT"],
        ]),
      }),
  },
  {
    input: "a nested __proto__ key in data",
    field: "entry.data.a.__proto__",
    call: (n) => create(n, { data: { a: objectWithKeys([["__proto__", { b: 1 }]]) } }),
  },
  // Anonymous discovery.
  { input: "NUL in a condition value", field: "conditions[0].value", call: condition("description", "=", "a\u0000") },
  {
    input: "an unpaired surrogate in a text condition value",
    field: "conditions[0].value",
    on: JSON_TRANSPORTS,
    call: condition("description", "=", LONE_HIGH),
  },
  {
    input: "an unpaired surrogate in a data condition value",
    field: "conditions[0].value",
    on: JSON_TRANSPORTS,
    call: condition("data.license", "=", `MIT${LONE_LOW}`),
  },
  {
    input: "an unpaired surrogate in an IN list",
    field: "conditions[0].value",
    on: JSON_TRANSPORTS,
    call: condition("name", "IN", ["ok", LONE_HIGH]),
  },
  {
    input: "an unpaired surrogate in a tags CONTAINS",
    field: "conditions[0].value",
    on: JSON_TRANSPORTS,
    call: condition("tags", "CONTAINS", LONE_HIGH),
  },
  {
    input: "an unpaired surrogate in a LIKE-able data CONTAINS",
    field: "conditions[0].value",
    on: JSON_TRANSPORTS,
    call: condition("data.license", "CONTAINS", LONE_HIGH),
  },
  { input: "1e400 in a data condition value", field: "conditions[0].value", call: condition("data.n", "=", new NumberText("1e400")) },
  {
    input: "-1e400 in a sequence condition value",
    field: "conditions[0].value",
    call: condition("sequence", ">", new NumberText("-1e400")),
  },
  { input: "NaN in a condition value", field: "conditions[0].value", on: BINARY_TRANSPORTS, call: condition("data.n", "=", NaN) },
  { input: "Infinity in an IN list", field: "conditions[0].value", on: BINARY_TRANSPORTS, call: condition("data.n", "IN", [1, Infinity]) },
  { input: "NUL in the discover entryType", field: "entryType", call: discover({ entryType: "skill\u0000" }) },
  {
    input: "an unpaired surrogate in the discover entryType",
    field: "body",
    says: "DiscoverEntriesRequest.entry_type",
    on: JSON_TRANSPORTS,
    call: discover({ entryType: LONE_HIGH }),
  },
  { input: "a __proto__ data path in a condition", field: "conditions[0].field", call: condition("data.__proto__.x", "=", "y") },
  // The query language.
  { input: "NUL in a query string literal", field: "query", call: query("SELECT entry_did FROM entries WHERE description = 'a\u0000'") },
  {
    input: "an unpaired surrogate in a query string literal",
    field: "body",
    says: "QueryEntriesRequest.query",
    on: JSON_TRANSPORTS,
    call: query(`SELECT entry_did FROM entries WHERE description = '${LONE_HIGH}'`),
  },
  {
    input: "an unpaired surrogate in a data comparison",
    field: "body",
    says: "QueryEntriesRequest.query",
    on: JSON_TRANSPORTS,
    call: query(`SELECT entry_did FROM entries WHERE data.license = 'x${LONE_LOW}'`),
  },
  {
    input: "an unpaired surrogate in a LIKE pattern",
    field: "body",
    says: "QueryEntriesRequest.query",
    on: JSON_TRANSPORTS,
    call: query(`SELECT entry_did FROM entries WHERE name LIKE '%${LONE_HIGH}%'`),
  },
  { input: "a __proto__ data path in a query", field: "query", call: query("SELECT data.__proto__.polluted FROM entries") },
];

/** Each transport's protocol for the follow-up look-up (Connect's JSON and binary codecs share one). */
const LOOKUP_PROTOCOL: Record<Transport, Protocol> = {
  rest: "rest",
  "connect-json": "connect",
  connect: "connect",
  "grpc-web": "grpc-web",
  grpc: "grpc",
};
const TRANSPORT_TAG: Record<Transport, string> = { rest: "r", "connect-json": "j", connect: "c", "grpc-web": "w", grpc: "g" };

function expectRefused(result: CallResult, field: string, says?: string): void {
  expect(result.code, result.message).toBe("invalid_argument");
  expect(result.fields).toContain(field);
  if (says !== undefined) expect(result.message).toContain(says);
  if (result.httpStatus !== undefined) expect(result.httpStatus).toBe(400);
}

describe.each(TRANSPORTS)("client input over %s", (transport) => {
  const rows = CASES.map((c, index) => ({ ...c, index })).filter((c) => c.on === undefined || c.on.includes(transport));

  it.each(rows)("refuses $input, naming $field", async ({ field, says, call, index }) => {
    const name = `abuse-${index}-${TRANSPORT_TAG[transport]}`;
    const request = await call(name);
    const result = await sendAbuse(transport, registry.url, request);
    expectRefused(result, field, says);

    const lookup = registryClient(LOOKUP_PROTOCOL[transport], registry.url);
    if (request.method === "CreateEntry") {
      expect((await lookup.resolve(`did:reg:main:skill:${name}`)).code).toBe("not_found");
    } else if (request.method === "RevokeEntry") {
      const resolved = await lookup.resolve(request.did);
      expect(resolved.body).toMatchObject({ status: "active" });
    }
    lookup.close();
  });
});

describe("a __proto__ path in a query over stored entries", () => {
  it("leaves Object.prototype untouched", async () => {
    const entry = await publisher.entry("abuse-pollution", "1.0.0");
    expect((await registryClient("rest", registry.url).create(entry, token)).code).toBe("ok");
    const result = await sendAbuse("rest", registry.url, {
      method: "QueryEntries",
      body: { query: "SELECT data.__proto__.polluted FROM entries" },
    });
    expect(result.code).toBe("invalid_argument");
    expect(Object.hasOwn(Object.prototype, "polluted")).toBe(false);
  });
});
