import { create, toBinary } from "@bufbuild/protobuf";
import { BinaryWriter, WireType } from "@bufbuild/protobuf/wire";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  CreateEntryRequestSchema,
  DiscoverEntriesRequestSchema,
  ResolveEntryRequestSchema,
} from "../../gen/registry/v1/registry_service_pb.js";
import { startPublishingRegistry, type PublishingSetup, type TestPublisher, type TestRegistry } from "../support/registry-fixture.js";
import type { Protocol } from "../support/protocol-clients.js";
import {
  BINARY_TRANSPORTS,
  encodedRequest,
  JSON_TRANSPORTS,
  jsonText,
  objectWithKeys,
  TRANSPORTS,
  type Transport,
} from "./abuse-transports.js";
import { expectClientError, expectStillServing, timed } from "./client-error.js";
import {
  callRaw,
  envelope,
  http1Request,
  http2Request,
  httpOutcome,
  outcomeOf,
  RPC_PATH,
  type RegistryMethod,
  type RpcBody,
  type WireOutcome,
} from "./raw-wire.js";

/**
 * Request bodies no client should send, on every protocol that can carry them: over the size
 * limit (by a byte and by far, with a content-length, chunked, or declared and never sent), nested
 * 10,000 deep, in the wrong content type, empty, on GET routes, with duplicate keys, huge numbers,
 * and the wrong JSON or wire types. Each is refused as the client's fault, and an ordinary resolve
 * on the same protocol works right after.
 *
 * To add a case, add a row: `send` builds the request for one transport (the REST route's body
 * text, Connect's request JSON, or the message's protobuf bytes), `expect` is the code the
 * contract names (any client error when absent), `on` the transports that can carry it.
 */

/** The contract's body limit, which the registry applies by default. */
const MAX_BODY = 256 * 1024;
const SEEDED = "did:reg:main:skill:abuse-bodies@1.0.0";

let setup: PublishingSetup;
let registry: TestRegistry;
let publisher: TestPublisher;
let token: string;

beforeAll(async () => {
  setup = await startPublishingRegistry(["registry.publish.skill"]);
  ({ registry, publisher, token } = setup);
  const seeded = await callRaw("rest", registry.url, "CreateEntry", {
    body: JSON.stringify(await publisher.entry("abuse-bodies", "1.0.0")),
    headers: { authorization: `Bearer ${token}` },
  });
  expect(seeded.code, seeded.message).toBe("ok");
});

afterAll(async () => {
  await setup?.close();
});

/** The protocol whose ordinary client checks the server after a case on this transport. */
const FOLLOW_UP: Record<Transport, Protocol> = {
  rest: "rest",
  "connect-json": "connect",
  connect: "connect",
  "grpc-web": "grpc-web",
  grpc: "grpc",
};

interface BodyCase {
  readonly name: string;
  readonly method: RegistryMethod;
  readonly on: readonly Transport[];
  /** "ok" for the controls; otherwise the code(s) the contract names, or any client error. */
  readonly expect?: string | readonly string[];
  /** A field the google.rpc.BadRequest detail must name (any of these). */
  readonly field?: readonly string[];
  readonly send: (transport: Transport) => Promise<RpcBody> | RpcBody;
}

// ---- bodies of a given size ----

/** A discover request of exactly `size` bytes on the wire (gRPC's 5-byte frame aside), valid apart from its size. */
function discoverOfSize(transport: Transport, size: number): Uint8Array | string {
  if (JSON_TRANSPORTS.includes(transport)) {
    // Whitespace after the value is valid JSON, so the padding changes nothing but the size.
    const json = JSON.stringify({ conditions: [{ field: "name", op: "=", value: "abuse-bodies" }] });
    return json + " ".repeat(size - json.length);
  }
  const message = toBinary(DiscoverEntriesRequestSchema, create(DiscoverEntriesRequestSchema, { entryType: "skill" }));
  return withUnknownPadding(message, size);
}

/** `message` followed by an unknown length-delimited field (number 15), so that the whole is `size` bytes. */
function withUnknownPadding(message: Uint8Array, size: number): Uint8Array {
  // Tag (1 byte) and a length varint; find the content length that makes the total exact.
  for (let content = size - message.length - 2; content >= 0; content--) {
    const padding = new BinaryWriter().tag(15, WireType.LengthDelimited).bytes(new Uint8Array(content)).finish();
    if (message.length + padding.length === size) return Buffer.concat([message, padding]);
  }
  throw new Error(`cannot pad to ${size} bytes`);
}

const FAR_OVER = 8 * 1024 * 1024;

const sized =
  (size: number, framing: RpcBody["framing"]) =>
  (transport: Transport): RpcBody => ({ body: discoverOfSize(transport, size), framing });

const SIZE_CASES: readonly BodyCase[] = [
  {
    name: "a body of exactly the limit (control)",
    method: "DiscoverEntries",
    on: TRANSPORTS,
    expect: "ok",
    send: sized(MAX_BODY, "length"),
  },
  {
    name: "a body exactly at the limit, chunked (control)",
    method: "DiscoverEntries",
    on: TRANSPORTS,
    expect: "ok",
    send: sized(MAX_BODY, "chunked"),
  },
  {
    name: "a body one byte over the limit, with a content-length",
    method: "DiscoverEntries",
    on: TRANSPORTS,
    expect: "resource_exhausted",
    send: sized(MAX_BODY + 1, "length"),
  },
  {
    name: "a body one byte over the limit, chunked",
    method: "DiscoverEntries",
    on: TRANSPORTS,
    expect: "resource_exhausted",
    send: sized(MAX_BODY + 1, "chunked"),
  },
  {
    name: "a body of 8 MiB, with a content-length",
    method: "DiscoverEntries",
    on: TRANSPORTS,
    expect: "resource_exhausted",
    send: sized(FAR_OVER, "length"),
  },
  {
    name: "a body of 8 MiB, chunked",
    method: "DiscoverEntries",
    on: TRANSPORTS,
    expect: "resource_exhausted",
    send: sized(FAR_OVER, "chunked"),
  },
  {
    name: "a content-length of 1 GiB, of which nothing is sent",
    method: "DiscoverEntries",
    on: TRANSPORTS,
    expect: "resource_exhausted",
    send: () => ({ body: "", framing: { declared: 1024 * 1024 * 1024 } }),
  },
  {
    name: "a create one byte over the limit, with a valid token",
    method: "CreateEntry",
    on: TRANSPORTS,
    expect: "resource_exhausted",
    send: async (transport) => {
      const entry = await publisher.entry("abuse-bodies-big", "1.0.0", { description: "x".repeat(MAX_BODY) });
      return withToken(await createBody(transport, entry));
    },
  },
];

// ---- deep bodies ----

const DEEP = 10_000;

/** JSON text of objects nested `depth` deep: {"a":{"a":...1...}}. */
const deepObjectJson = (depth: number) => `${'{"a":'.repeat(depth)}1${"}".repeat(depth)}`;
/** JSON text of arrays nested `depth` deep: [[[...1...]]]. */
const deepArrayJson = (depth: number) => `${"[".repeat(depth)}1${"]".repeat(depth)}`;

function varint(value: number): number[] {
  const bytes: number[] = [];
  while (value > 0x7f) {
    bytes.push((value & 0x7f) | 0x80);
    value >>>= 7;
  }
  bytes.push(value);
  return bytes;
}

/**
 * The protobuf bytes of a google.protobuf.Value nested `depth` deep: each level a struct
 * {"a": <inner>} or a list [<inner>], around the number 1. Built outside-in from lengths computed
 * inside-out, in linear time (wrapping level by level would copy the square of the size).
 */
function deepValueBytes(depth: number, kind: "struct" | "list"): Buffer {
  const innermost = Buffer.from([0x11, 0, 0, 0, 0, 0, 0, 0xf0, 0x3f]); // number_value = 1.0
  const prefixes: number[][] = [];
  let length = innermost.length;
  for (let level = 0; level < depth; level++) {
    let prefix: number[];
    if (kind === "struct") {
      // Value{struct_value(5): Struct{fields(1): entry{key(1): "a", value(2): inner}}}
      const entry = [0x0a, 0x01, 0x61, 0x12, ...varint(length)];
      const entryLength = entry.length + length;
      const struct = [0x0a, ...varint(entryLength)];
      const structLength = struct.length + entryLength;
      prefix = [0x2a, ...varint(structLength), ...struct, ...entry];
    } else {
      // Value{list_value(6): ListValue{values(1): inner}}
      const list = [0x0a, ...varint(length)];
      const listLength = list.length + length;
      prefix = [0x32, ...varint(listLength), ...list];
    }
    prefixes.push(prefix);
    length += prefix.length;
  }
  return Buffer.concat([Buffer.from(prefixes.reverse().flat()), innermost]);
}

/** A google.protobuf.Struct {"a": <Value nested depth - 1 deep>}. */
function deepStructBytes(depth: number, kind: "struct" | "list"): Buffer {
  const value = deepValueBytes(depth - 1, kind);
  const entry = Buffer.concat([Buffer.from([0x0a, 0x01, 0x61, 0x12, ...varint(value.length)]), value]);
  return Buffer.concat([Buffer.from([0x0a, ...varint(entry.length)]), entry]);
}

const lengthDelimited = (field: number, bytes: Uint8Array) => new BinaryWriter().tag(field, WireType.LengthDelimited).bytes(bytes).finish();

/** A create request's bytes with entry.data (field 8) given as raw Struct bytes; protobuf merges the second `entry`. */
async function createWithDataBytes(data: Uint8Array): Promise<Uint8Array> {
  const entry = await publisher.entry("abuse-bodies-deep", "1.0.0", { data: {} });
  const head = toBinary(CreateEntryRequestSchema, create(CreateEntryRequestSchema, { entry: { ...entry, data: undefined } as never }));
  return Buffer.concat([head, lengthDelimited(1, lengthDelimited(8, data))]);
}

/** A discover request with one condition on data.a whose value is raw Value bytes. */
function discoverWithValueBytes(value: Uint8Array): Uint8Array {
  const condition = Buffer.concat([
    new BinaryWriter().tag(1, WireType.LengthDelimited).string("data.a").tag(2, WireType.LengthDelimited).string("=").finish(),
    lengthDelimited(3, value),
  ]);
  return lengthDelimited(2, condition);
}

/** The body of a create for this transport: the entry's JSON (REST), the request's JSON (Connect), or its bytes. */
async function createBody(transport: Transport, entry: Record<string, unknown>, dataJson?: string): Promise<RpcBody> {
  if (JSON_TRANSPORTS.includes(transport)) {
    let text = JSON.stringify(dataJson === undefined ? entry : { ...entry, data: "\u0001DATA\u0001" });
    if (dataJson !== undefined) text = text.replace(JSON.stringify("\u0001DATA\u0001"), dataJson);
    return { body: transport === "rest" ? text : `{"entry":${text}}` };
  }
  return { body: toBinary(CreateEntryRequestSchema, create(CreateEntryRequestSchema, { entry: entry as never })) };
}

const withToken = (body: RpcBody): RpcBody => ({ ...body, headers: { ...body.headers, authorization: `Bearer ${token}` } });

/** A create whose data is this JSON text (JSON transports) or these Struct bytes (binary ones). */
const createWithData =
  (json: string, bytes: () => Uint8Array) =>
  async (transport: Transport): Promise<RpcBody> => {
    const entry = await publisher.entry("abuse-bodies-deep", "1.0.0");
    if (JSON_TRANSPORTS.includes(transport)) return withToken(await createBody(transport, entry, json));
    return withToken({ body: await createWithDataBytes(bytes()) });
  };

/** A discover with one condition whose value is this JSON text or these Value bytes. */
const conditionValue =
  (json: string, bytes: () => Uint8Array) =>
  (transport: Transport): RpcBody =>
    JSON_TRANSPORTS.includes(transport)
      ? { body: `{"conditions":[{"field":"data.a","op":"=","value":${json}}]}` }
      : { body: discoverWithValueBytes(bytes()) };

/** `depth` nested unknown groups (wire type 3), which a decoder must skip without recursing forever. */
function nestedGroups(depth: number): Buffer {
  const start = new BinaryWriter().tag(14, WireType.StartGroup).finish();
  const end = new BinaryWriter().tag(14, WireType.EndGroup).finish();
  return Buffer.concat([...Array<Uint8Array>(depth).fill(start), ...Array<Uint8Array>(depth).fill(end)]);
}

const DATA_FIELDS = ["data", "entry.data", "body"];

const DEPTH_CASES: readonly BodyCase[] = [
  {
    name: "data nested 17 deep, one past the limit",
    method: "CreateEntry",
    on: TRANSPORTS,
    expect: "invalid_argument",
    field: ["data"],
    send: createWithData(deepObjectJson(17), () => deepStructBytes(17, "struct")),
  },
  {
    name: "data objects nested 10,000 deep",
    method: "CreateEntry",
    on: TRANSPORTS,
    expect: "invalid_argument",
    field: DATA_FIELDS,
    send: createWithData(deepObjectJson(DEEP), () => deepStructBytes(DEEP, "struct")),
  },
  {
    name: "a data list nested 10,000 deep",
    method: "CreateEntry",
    on: TRANSPORTS,
    expect: "invalid_argument",
    field: DATA_FIELDS,
    send: createWithData(`{"a":${deepArrayJson(DEEP)}}`, () => deepStructBytes(DEEP, "list")),
  },
  {
    name: "protobuf Struct nesting of 101, past the decoder's 100",
    method: "CreateEntry",
    on: BINARY_TRANSPORTS,
    expect: "invalid_argument",
    field: ["body"],
    send: async () => withToken({ body: await createWithDataBytes(deepStructBytes(101, "struct")) }),
  },
  {
    name: "a condition value of arrays nested 10,000 deep",
    method: "DiscoverEntries",
    on: TRANSPORTS,
    expect: "invalid_argument",
    send: conditionValue(deepArrayJson(DEEP), () => deepValueBytes(DEEP, "list")),
  },
  {
    name: "a condition value of objects nested 10,000 deep",
    method: "DiscoverEntries",
    on: TRANSPORTS,
    expect: "invalid_argument",
    send: conditionValue(deepObjectJson(DEEP), () => deepValueBytes(DEEP, "struct")),
  },
  {
    name: "a condition value nested 101 deep",
    method: "DiscoverEntries",
    on: TRANSPORTS,
    expect: "invalid_argument",
    send: conditionValue(deepArrayJson(101), () => deepValueBytes(101, "list")),
  },
  {
    name: "the query given as arrays nested 10,000 deep",
    method: "QueryEntries",
    on: JSON_TRANSPORTS,
    expect: "invalid_argument",
    send: () => ({ body: `{"query":${deepArrayJson(DEEP)}}` }),
  },
  {
    name: "the whole body as arrays nested 10,000 deep",
    method: "DiscoverEntries",
    on: JSON_TRANSPORTS,
    expect: "invalid_argument",
    send: () => ({ body: deepArrayJson(DEEP) }),
  },
  {
    name: "an unknown field holding objects nested 10,000 deep",
    method: "DiscoverEntries",
    on: JSON_TRANSPORTS,
    expect: "invalid_argument",
    send: () => ({ body: `{"extra":${deepObjectJson(DEEP)}}` }),
  },
  {
    name: "10,000 nested unknown groups",
    method: "DiscoverEntries",
    on: BINARY_TRANSPORTS,
    expect: "invalid_argument",
    send: () => ({ body: nestedGroups(DEEP) }),
  },
];

// ---- content types, empty bodies, duplicate keys, numbers, types ----

const resolveJson = JSON.stringify({ did: SEEDED });
const resolveProto = () => toBinary(ResolveEntryRequestSchema, create(ResolveEntryRequestSchema, { did: SEEDED }));

/** A resolve with this content type: the JSON form, or the binary one where the type names protobuf. */
const resolveAs =
  (contentType: string | null, body: () => Uint8Array | string = () => resolveJson) =>
  (): RpcBody => ({ body: body(), contentType });

const CONTENT_TYPE_CASES: readonly BodyCase[] = [
  { name: "text/plain on an RPC path", method: "ResolveEntry", on: ["connect-json"], send: resolveAs("text/plain") },
  { name: "no content type on an RPC path", method: "ResolveEntry", on: ["connect-json"], send: resolveAs(null) },
  {
    name: "application/xml on an RPC path",
    method: "ResolveEntry",
    on: ["connect-json"],
    send: resolveAs("application/xml", () => `<did>${SEEDED}</did>`),
  },
  {
    name: "a form on an RPC path",
    method: "ResolveEntry",
    on: ["connect-json"],
    send: resolveAs("application/x-www-form-urlencoded", () => `did=${encodeURIComponent(SEEDED)}`),
  },
  {
    name: "multipart on an RPC path",
    method: "ResolveEntry",
    on: ["connect-json"],
    send: resolveAs("multipart/form-data; boundary=x", () => `--x\r\n\r\n${resolveJson}\r\n--x--\r\n`),
  },
  {
    name: "JSON with a latin-1 charset",
    method: "ResolveEntry",
    on: ["connect-json"],
    send: resolveAs("application/json; charset=iso-8859-1"),
  },
  {
    name: "Connect's streaming JSON type on a unary method",
    method: "ResolveEntry",
    on: ["connect-json"],
    send: resolveAs("application/connect+json"),
  },
  {
    name: "gRPC-Web text with JSON, which it cannot carry",
    method: "ResolveEntry",
    on: ["connect-json"],
    send: resolveAs("application/grpc-web-text+json"),
  },
  {
    name: "protobuf bytes labelled JSON",
    method: "ResolveEntry",
    on: ["connect-json"],
    expect: "invalid_argument",
    send: resolveAs("application/json", resolveProto),
  },
  {
    name: "JSON text labelled protobuf",
    method: "ResolveEntry",
    on: ["connect"],
    expect: "invalid_argument",
    send: resolveAs("application/proto"),
  },
  {
    name: "JSON text in a gRPC-Web protobuf frame",
    method: "ResolveEntry",
    on: ["grpc-web"],
    expect: "invalid_argument",
    send: () => ({ body: resolveJson }),
  },
  {
    name: "JSON text in a gRPC protobuf frame",
    method: "ResolveEntry",
    on: ["grpc"],
    expect: "invalid_argument",
    send: () => ({ body: resolveJson }),
  },
  {
    name: "a REST body in XML",
    method: "DiscoverEntries",
    on: ["rest"],
    expect: "invalid_argument",
    send: () => ({ body: "<discover/>", contentType: "application/xml" }),
  },
  {
    name: "a REST body in protobuf",
    method: "DiscoverEntries",
    on: ["rest"],
    expect: "invalid_argument",
    send: () => ({
      body: toBinary(DiscoverEntriesRequestSchema, create(DiscoverEntriesRequestSchema, { entryType: "skill" })),
      contentType: "application/proto",
    }),
  },
];

const EMPTY_CASES: readonly BodyCase[] = [
  { name: "an empty create body", method: "CreateEntry", on: TRANSPORTS, expect: "invalid_argument", send: () => withToken({ body: "" }) },
  {
    name: "an empty query body",
    method: "QueryEntries",
    on: TRANSPORTS,
    expect: "invalid_argument",
    field: ["query"],
    send: () => ({ body: "" }),
  },
  {
    name: "an empty JSON object as a create body",
    method: "CreateEntry",
    on: JSON_TRANSPORTS,
    expect: "invalid_argument",
    send: () => withToken({ body: "{}" }),
  },
  {
    name: "only whitespace",
    method: "DiscoverEntries",
    on: JSON_TRANSPORTS,
    expect: "invalid_argument",
    send: () => ({ body: " \r\n\t " }),
  },
  { name: "JSON null", method: "DiscoverEntries", on: JSON_TRANSPORTS, expect: "invalid_argument", send: () => ({ body: "null" }) },
  // An empty discover is a valid request (every entry, newest first) on every protocol.
  {
    name: "an empty discover body (control: the empty message is valid)",
    method: "DiscoverEntries",
    on: ["rest", "connect-json", "connect"],
    expect: "ok",
    send: () => ({ body: "" }),
  },
];

/** A create whose entry JSON text is built by `edit` from a freshly signed entry's. */
const editedCreate =
  (name: string, edit: (text: string) => string, fields: Record<string, unknown> = {}) =>
  async (transport: Transport): Promise<RpcBody> => {
    const entry = await publisher.entry(`${name}-${transport}`, "1.0.0", fields);
    const text = edit(JSON.stringify(entry));
    return withToken({ body: transport === "rest" ? text : `{"entry":${text}}` });
  };

const DUPLICATE_KEY_CASES: readonly BodyCase[] = [
  {
    name: "a duplicate description, signed over the first",
    method: "CreateEntry",
    on: JSON_TRANSPORTS,
    expect: "invalid_argument",
    field: ["signature"],
    send: editedCreate(
      "abuse-dup-first",
      (text) => text.replace('"description":"signed"', '"description":"signed","description":"changed"'),
      { description: "signed" },
    ),
  },
  {
    name: "a duplicate data key, signed over the first value",
    method: "CreateEntry",
    on: JSON_TRANSPORTS,
    expect: "invalid_argument",
    field: ["signature"],
    send: editedCreate("abuse-dup-data", (text) => text.replace('"data":{"a":1}', '"data":{"a":1,"a":2}'), { data: { a: 1 } }),
  },
  {
    name: "an entry field under both its JSON and its proto name",
    method: "CreateEntry",
    on: JSON_TRANSPORTS,
    expect: "invalid_argument",
    send: editedCreate("abuse-dup-names", (text) =>
      text.replace('"contentHash":', `"content_hash":"sha256:${"cd".repeat(32)}","contentHash":`),
    ),
  },
  {
    name: "a duplicate query, the second one malformed",
    method: "QueryEntries",
    on: JSON_TRANSPORTS,
    expect: "invalid_argument",
    field: ["query"],
    send: () => ({ body: '{"query":"SELECT * FROM entries","query":"SELECT FROM"}' }),
  },
];

const NUMBER_CASES: readonly BodyCase[] = [
  ...(
    [
      ["1e300", "1e300"],
      ["2^31, past int32", "2147483648"],
      ["-2^31 - 1, past int32", "-2147483649"],
      ["a 30-digit integer", "123456789012345678901234567890"],
      ["a fraction", "1.5"],
      ["-1 (negative)", "-1"],
      ["a string of digits too long for int32", '"99999999999999999999"'],
      ["a string that is no number", '"many"'],
    ] as const
  ).map(
    ([label, text]): BodyCase => ({
      name: `limit ${label}`,
      method: "DiscoverEntries",
      on: JSON_TRANSPORTS,
      expect: "invalid_argument",
      send: () => ({ body: `{"limit":${text}}` }),
    }),
  ),
  {
    name: "limit -1 as a ten-byte varint",
    method: "DiscoverEntries",
    on: BINARY_TRANSPORTS,
    expect: "invalid_argument",
    send: () => ({ body: new BinaryWriter().tag(3, WireType.Varint).int32(-1).finish() }),
  },
  {
    name: "an overlong varint (11 bytes)",
    method: "DiscoverEntries",
    on: BINARY_TRANSPORTS,
    expect: "invalid_argument",
    send: () => ({ body: Buffer.from([0x18, ...Array(10).fill(0xff), 0x01]) }),
  },
  {
    name: "a sequence past int64 in a create",
    method: "CreateEntry",
    on: JSON_TRANSPORTS,
    expect: "invalid_argument",
    send: editedCreate("abuse-big-sequence", (text) => text.replace(/}$/, ',"sequence":"99999999999999999999999"}')),
  },
  {
    name: "a sequence condition of 1e308",
    method: "DiscoverEntries",
    on: TRANSPORTS,
    expect: "invalid_argument",
    field: ["conditions[0].value"],
    send: conditionOn("sequence", ">", "1e308", 1e308),
  },
  {
    name: "a sequence condition of 30 digits",
    method: "DiscoverEntries",
    on: JSON_TRANSPORTS,
    expect: "invalid_argument",
    field: ["conditions[0].value"],
    send: conditionOn("sequence", "<", "123456789012345678901234567890", 0),
  },
  {
    name: "a sequence condition of -1e308",
    method: "DiscoverEntries",
    on: TRANSPORTS,
    expect: "invalid_argument",
    field: ["conditions[0].value"],
    send: conditionOn("sequence", ">", "-1e308", -1e308),
  },
  {
    name: "a sequence condition of 0.5",
    method: "DiscoverEntries",
    on: TRANSPORTS,
    expect: "invalid_argument",
    field: ["conditions[0].value"],
    send: conditionOn("sequence", ">=", "0.5", 0.5),
  },
  {
    name: "a data condition of 1e308 (control: a finite number compares)",
    method: "DiscoverEntries",
    on: TRANSPORTS,
    expect: "ok",
    send: conditionOn("data.n", ">", "1e308", 1e308),
  },
  {
    name: "a bondAmount condition with a 400-digit amount",
    method: "DiscoverEntries",
    on: TRANSPORTS,
    expect: "invalid_argument",
    field: ["conditions[0].value"],
    send: conditionOn("bondAmount", ">", JSON.stringify(`${"9".repeat(400)} USDC`), `${"9".repeat(400)} USDC`),
  },
  {
    name: "a version condition with a 1,000-digit major",
    method: "DiscoverEntries",
    on: TRANSPORTS,
    expect: "invalid_argument",
    field: ["conditions[0].value"],
    send: conditionOn("version", ">", JSON.stringify(`${"9".repeat(1000)}.0.0`), `${"9".repeat(1000)}.0.0`),
  },
];

/** A discover with one condition, its value as this JSON text or this number/string on binary transports. */
function conditionOn(field: string, op: string, json: string, value: number | string) {
  return (transport: Transport): RpcBody => {
    if (JSON_TRANSPORTS.includes(transport)) return { body: `{"conditions":[{"field":"${field}","op":"${op}","value":${json}}]}` };
    return {
      body: toBinary(
        DiscoverEntriesRequestSchema,
        create(DiscoverEntriesRequestSchema, {
          conditions: [
            {
              field,
              op,
              value: typeof value === "number" ? { kind: { case: "numberValue", value } } : { kind: { case: "stringValue", value } },
            },
          ],
        }),
      ),
    };
  };
}

const TYPE_CASES: readonly BodyCase[] = [
  ...(
    [
      ["an array as the discover body", "[]"],
      ["conditions as an object", '{"conditions":{}}'],
      ["a condition as an array", '{"conditions":[[]]}'],
      ["a condition as a string", '{"conditions":["name = x"]}'],
      ["a condition field as an array", '{"conditions":[{"field":["name"],"op":"=","value":"x"}]}'],
      ["a condition op as an object", '{"conditions":[{"field":"name","op":{"eq":true},"value":"x"}]}'],
      ["an object where a name is compared", '{"conditions":[{"field":"name","op":"=","value":{"a":1}}]}'],
      ["entryType as an array", '{"entryType":["skill"]}'],
      ["a cursor as an object", '{"cursor":{}}'],
    ] as const
  ).map(
    ([name, text]): BodyCase => ({
      name,
      method: "DiscoverEntries",
      on: JSON_TRANSPORTS,
      expect: "invalid_argument",
      send: () => ({ body: text }),
    }),
  ),
  {
    name: "the query as an object",
    method: "QueryEntries",
    on: JSON_TRANSPORTS,
    expect: "invalid_argument",
    send: () => ({ body: '{"query":{"select":"*"}}' }),
  },
  {
    name: "the entry as an array",
    method: "CreateEntry",
    on: JSON_TRANSPORTS,
    expect: "invalid_argument",
    send: () => withToken({ body: "[]" }),
  },
  {
    name: "data as an array",
    method: "CreateEntry",
    on: JSON_TRANSPORTS,
    expect: "invalid_argument",
    send: editedCreate("abuse-data-array", (text) => text.replace('"data":{"license":"MIT"}', '"data":[1,2]')),
  },
  {
    name: "tags as an object",
    method: "CreateEntry",
    on: JSON_TRANSPORTS,
    expect: "invalid_argument",
    send: editedCreate("abuse-tags-object", (text) => text.replace('"tags":["search","web"]', '"tags":{"0":"search"}')),
  },
  {
    name: "conditions (a message field) as a varint",
    method: "DiscoverEntries",
    on: BINARY_TRANSPORTS,
    expect: "invalid_argument",
    send: () => ({ body: new BinaryWriter().tag(2, WireType.Varint).uint32(7).finish() }),
  },
  {
    name: "the entry as a fixed32",
    method: "CreateEntry",
    on: BINARY_TRANSPORTS,
    expect: "invalid_argument",
    send: () => withToken({ body: new BinaryWriter().tag(1, WireType.Bit32).fixed32(7).finish() }),
  },
  {
    name: "a string field holding a length past the body",
    method: "QueryEntries",
    on: BINARY_TRANSPORTS,
    expect: "invalid_argument",
    send: () => ({ body: Buffer.from([0x0a, 0xff, 0xff, 0x03, 0x53]) }),
  },
];

describe.each(TRANSPORTS)("abusive bodies over %s", (transport) => {
  const groups: [string, readonly BodyCase[]][] = [
    ["size", SIZE_CASES],
    ["depth", DEPTH_CASES],
    ["content type", CONTENT_TYPE_CASES],
    ["empty", EMPTY_CASES],
    ["duplicate keys", DUPLICATE_KEY_CASES],
    ["numbers", NUMBER_CASES],
    ["types", TYPE_CASES],
  ];
  for (const [group, cases] of groups) {
    const rows = cases.filter((c) => c.on.includes(transport));
    if (rows.length === 0) continue;
    describe(group, () => {
      it.each(rows)("$name", async (row) => {
        const body = await row.send(transport);
        const { result, ms } = await timed(() => callRaw(transport, registry.url, row.method, body));
        expectAnswer(result, row);
        expect(ms, "answered promptly").toBeLessThan(5_000);
        await expectStillServing(registry.url, FOLLOW_UP[transport], SEEDED);
      });
    });
  }
});

function expectAnswer(result: WireOutcome, row: BodyCase): void {
  const expected = [row.expect ?? []].flat();
  if (expected.includes("ok") && result.code === "ok") return;
  expectClientError(result, expected.length === 0 ? undefined : expected.filter((code) => code !== "ok"));
  if (row.field !== undefined)
    expect(
      result.fields.some((field) => row.field!.includes(field)),
      `fields ${JSON.stringify(result.fields)}: ${result.message}`,
    ).toBe(true);
}

describe.each(["rest", "connect-json", "connect", "grpc-web"] as const)("body sizes over HTTP/2, %s", (transport) => {
  it.each(SIZE_CASES)("$name", async (row) => {
    const body = { ...(await row.send(transport)), http2: true };
    expectAnswer(await callRaw(transport, registry.url, row.method, body), row);
    await expectStillServing(registry.url, FOLLOW_UP[transport], SEEDED);
  });
});

describe("bodies on GET routes", () => {
  const url = () => registry.url;
  const resolvePath = `/v1/entries/${encodeURIComponent(SEEDED)}`;
  const connectGet = `${RPC_PATH("ResolveEntry")}?encoding=json&message=${encodeURIComponent(resolveJson)}`;

  const entryDid = (json: any) => json.entryDid;
  it.each([
    ["a REST resolve with a JSON body", "GET", resolvePath, "length", entryDid],
    ["a REST resolve with a chunked body", "GET", resolvePath, "chunked", entryDid],
    [
      "a REST version list with a JSON body",
      "GET",
      `${resolvePath.replace("%401.0.0", "")}/versions`,
      "length",
      (json: any) => json.versions[0].entryDid,
    ],
    ["a REST HEAD with a body", "HEAD", resolvePath, "length", undefined],
    ["a Connect GET with a body", "GET", connectGet, "length", (json: any) => json.entry.entryDid],
  ] as const)("%s is answered as the GET it is, the body ignored", async (_name, method, path, framing, pick) => {
    const response = await http1Request(url(), {
      method,
      path,
      headers: { "content-type": "application/json" },
      body: '{"did":"did:reg:main:skill:other"}',
      framing,
    });
    expect(httpOutcome(response).code).toBe("ok");
    if (pick !== undefined) expect(pick(JSON.parse(response.body.toString()))).toBe(SEEDED);
    await expectStillServing(url(), "rest", SEEDED);
  });

  it("a REST resolve with a body far over the limit is no server error", async () => {
    const response = await http1Request(url(), {
      method: "GET",
      path: resolvePath,
      headers: { "content-type": "application/json" },
      body: "x".repeat(FAR_OVER),
      framing: "chunked",
    });
    const outcome = httpOutcome(response);
    if (outcome.code !== "ok") expectClientError(outcome);
    await expectStillServing(url(), "rest", SEEDED);
  });

  it("a POST-only route asked with GET and a body is 405", async () => {
    const response = await http1Request(url(), {
      method: "GET",
      path: "/v1/discover",
      headers: { "content-type": "application/json" },
      body: "{}",
    });
    expectClientError(httpOutcome(response), "unimplemented");
    expect(response.status).toBe(405);
  });
});

describe("JSON duplicate keys: the last one wins, for the signature and for storage alike", () => {
  it.each(JSON_TRANSPORTS)("over %s", async (transport) => {
    const entry = await publisher.entry(`abuse-dup-last-${transport}`, "1.0.0", { description: "the last one" });
    const text = JSON.stringify(entry).replace(
      '"description":"the last one"',
      '"description":"the first one","description":"the last one"',
    );
    const created = await callRaw(
      transport,
      registry.url,
      "CreateEntry",
      withToken({ body: transport === "rest" ? text : `{"entry":${text}}` }),
    );
    expect(created.code, created.message).toBe("ok");
    const resolved = await http1Request(registry.url, { method: "GET", path: `/v1/entries/${encodeURIComponent(entry.entryDid)}` });
    expect(JSON.parse(resolved.body.toString()).description).toBe("the last one");
  });
});

/**
 * gRPC over HTTP/1.1 (served by the registry's own gRPC code, trailers after a chunked body) and
 * the streaming methods (health Watch, server reflection: Connect's adapter, whose decoding errors
 * an interceptor maps to invalid_argument). This audit first found every row here answered as
 * internal, or worse, accepted.
 */
describe("bodies on the less travelled routes (gRPC over HTTP/1.1, streaming methods)", () => {
  interface AdapterCase {
    readonly name: string;
    readonly send: () => Promise<WireOutcome>;
    readonly expect?: string;
    readonly field?: readonly string[];
  }

  const garbage = Buffer.from([0x0a, 0xff, 0xff, 0xff, 0xff, 0x0f, 0x01]);
  const grpcHttp1 = async (
    method: RegistryMethod,
    payload: Uint8Array,
    options: { json?: boolean; token?: boolean; framing?: RpcBody["framing"] } = {},
  ) => {
    const headers: Record<string, string> = { "content-type": options.json ? "application/grpc+json" : "application/grpc", te: "trailers" };
    if (options.token) headers.authorization = `Bearer ${token}`;
    return outcomeOf(
      "grpc",
      await http1Request(registry.url, { path: RPC_PATH(method), headers, body: envelope(payload), framing: options.framing }),
    );
  };
  const grpcHttp2 = async (path: string, payload: Uint8Array) =>
    outcomeOf(
      "grpc",
      await http2Request(registry.url, { path, headers: { "content-type": "application/grpc", te: "trailers" }, body: envelope(payload) }),
    );
  /** A signed create whose data carries an unsigned "__proto__" key besides the signed ones. */
  const protoKeyCreate = async (name: string): Promise<Record<string, unknown>> => {
    const entry = await publisher.entry(name, "1.0.0");
    return {
      entry: {
        ...entry,
        data: objectWithKeys([
          ["__proto__", "x"],
          ["license", "MIT"],
        ]),
      },
    };
  };
  const notUtf8 = Buffer.concat([
    Buffer.from('{"conditions":[{"field":"name","op":"=","value":"a'),
    Buffer.from([0xff]),
    Buffer.from('"}]}'),
  ]);

  const ADAPTER_CASES: readonly AdapterCase[] = [
    {
      name: "an undecodable message, gRPC over HTTP/1.1",
      expect: "invalid_argument",
      send: () => grpcHttp1("ResolveEntry", garbage),
    },
    {
      name: "Struct nesting of 101, gRPC over HTTP/1.1",
      expect: "invalid_argument",
      send: async () => grpcHttp1("CreateEntry", await createWithDataBytes(deepStructBytes(101, "struct")), { token: true }),
    },
    {
      name: "an unsigned __proto__ key in data, gRPC over HTTP/1.1",
      expect: "invalid_argument",
      field: ["entry.data.__proto__"],
      send: async () =>
        grpcHttp1("CreateEntry", encodedRequest(CreateEntryRequestSchema, (await protoKeyCreate("abuse-adapter-proto-bin")) as never), {
          token: true,
        }),
    },
    {
      name: "an unsigned __proto__ key in data, gRPC+JSON over HTTP/1.1",
      expect: "invalid_argument",
      field: ["entry.data.__proto__"],
      send: async () =>
        grpcHttp1("CreateEntry", Buffer.from(jsonText((await protoKeyCreate("abuse-adapter-proto-json")) as never)), {
          json: true,
          token: true,
        }),
    },
    {
      name: "JSON that is not UTF-8, gRPC+JSON over HTTP/1.1",
      expect: "invalid_argument",
      field: ["body"],
      send: () => grpcHttp1("DiscoverEntries", notUtf8, { json: true }),
    },
    {
      name: "an unknown JSON field, gRPC+JSON over HTTP/1.1",
      expect: "invalid_argument",
      send: () => grpcHttp1("ResolveEntry", Buffer.from(JSON.stringify({ did: SEEDED, colour: "blue" })), { json: true }),
    },
    {
      name: "an empty body, gRPC over HTTP/1.1",
      send: async () =>
        outcomeOf(
          "grpc",
          await http1Request(registry.url, {
            path: RPC_PATH("ResolveEntry"),
            headers: { "content-type": "application/grpc", te: "trailers" },
          }),
        ),
    },
    {
      name: "one byte over the limit, gRPC over HTTP/1.1",
      expect: "resource_exhausted",
      send: () => grpcHttp1("ResolveEntry", new Uint8Array(MAX_BODY + 1)),
    },
    {
      name: "8 MiB chunked, gRPC over HTTP/1.1",
      expect: "resource_exhausted",
      send: () => grpcHttp1("ResolveEntry", new Uint8Array(FAR_OVER), { framing: "chunked" }),
    },
    {
      name: "an undecodable message to health Watch",
      expect: "invalid_argument",
      send: () => grpcHttp2("/grpc.health.v1.Health/Watch", garbage),
    },
    {
      name: "an undecodable message to server reflection",
      expect: "invalid_argument",
      send: () => grpcHttp2("/grpc.reflection.v1.ServerReflection/ServerReflectionInfo", garbage),
    },
  ];

  for (const row of ADAPTER_CASES) {
    const run = async () => {
      const result = await row.send();
      expectClientError(result, row.expect);
      if (row.field !== undefined)
        expect(
          result.fields.some((field) => row.field!.includes(field)),
          `fields ${JSON.stringify(result.fields)}: ${result.message}`,
        ).toBe(true);
      await expectStillServing(registry.url, "grpc", SEEDED);
    };
    it(row.name, run);
  }
});
