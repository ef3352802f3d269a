import http from "node:http";
import http2 from "node:http2";
import { gunzipSync, brotliDecompressSync, gzipSync } from "node:zlib";
import * as grpc from "@grpc/grpc-js";
import { create, fromBinary, toBinary } from "@bufbuild/protobuf";
import { Code, ConnectError, createClient } from "@connectrpc/connect";
import { createConnectTransport } from "@connectrpc/connect-node";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { RegistryService, ResolveEntryRequestSchema, ResolveEntryResponseSchema } from "../../gen/registry/v1/registry_service_pb.js";
import { TokenService } from "../../gen/auth/v1/token_service_pb.js";
import { createTestDatabase, type TestDatabase } from "../support/test-database.js";
import { createPublisher, startTestRegistry, type TestRegistry } from "../support/registry-fixture.js";
import { grpcJsClientConstructor } from "../support/grpc-js-client.js";

// The protocols' wire rules on the real registry: Connect GET and HTTP caching, compression,
// unknown methods, gRPC-Web text, bodies that do not decode, and limits on every protocol.
let db: TestDatabase;
let registry: TestRegistry;
const DID = "did:reg:main:skill:wire-test";
const VERSIONED = `${DID}@1.0.0`;
const RESOLVE = "/registry.v1.RegistryService/ResolveEntry";

beforeAll(async () => {
  db = await createTestDatabase();
  registry = await startTestRegistry(db.database, { maxBodyBytes: 4096 });
  const publisher = await createPublisher();
  const token = await registry.accessToken(publisher.did, ["registry.publish.skill"]);
  for (const [version, description] of [
    ["1.0.0", "short"],
    ["1.1.0", "x".repeat(1500)],
  ]) {
    const entry = await publisher.entry("wire-test", version as string, { description });
    const created = await fetch(`${registry.url}/v1/entries`, {
      method: "POST",
      headers: { authorization: `Bearer ${token}`, "content-type": "application/json" },
      body: JSON.stringify(entry),
    });
    expect(created.status).toBe(201);
  }
});
afterAll(async () => {
  await registry.close();
  await db.drop();
});

const resolveBytes = (did: string) => toBinary(ResolveEntryRequestSchema, create(ResolveEntryRequestSchema, { did }));
const envelope = (payload: Uint8Array, flags = 0) => {
  const frame = Buffer.alloc(5 + payload.length);
  frame[0] = flags;
  frame.writeUInt32BE(payload.length, 1);
  frame.set(payload, 5);
  return frame;
};
/** The message frames and the trailer block of a gRPC-Web body. */
function parseGrpcWeb(body: Buffer): { messages: Buffer[]; trailers: Record<string, string> } {
  const messages: Buffer[] = [];
  const trailers: Record<string, string> = {};
  for (let at = 0; at < body.length; ) {
    const length = body.readUInt32BE(at + 1);
    const payload = body.subarray(at + 5, at + 5 + length);
    if ((body[at] as number) & 0x80) {
      for (const line of payload.toString().split("\r\n").filter(Boolean)) {
        const colon = line.indexOf(":");
        trailers[line.slice(0, colon).trim()] = line.slice(colon + 1).trim();
      }
    } else messages.push(payload);
    at += 5 + length;
  }
  return { messages, trailers };
}

/** One HTTP/2 request with prior knowledge: status, headers, body and trailers. */
function h2Request(url: string, headers: http2.OutgoingHttpHeaders, body?: Uint8Array) {
  return new Promise<{ headers: http2.IncomingHttpHeaders; body: Buffer; trailers: http2.IncomingHttpHeaders }>((resolve, reject) => {
    const client = http2.connect(url);
    client.on("error", reject);
    const stream = client.request(headers);
    const chunks: Buffer[] = [];
    let responseHeaders: http2.IncomingHttpHeaders = {};
    let trailers: http2.IncomingHttpHeaders = {};
    stream.on("response", (h) => (responseHeaders = h));
    stream.on("trailers", (t) => (trailers = t));
    stream.on("data", (c: Buffer) => chunks.push(c));
    stream.on("end", () => {
      client.close();
      resolve({ headers: responseHeaders, body: Buffer.concat(chunks), trailers });
    });
    stream.on("error", reject);
    stream.end(body);
  });
}

describe("Connect GET and HTTP caching", () => {
  const getUrl = (did: string, method = "ResolveEntry") =>
    `${registry.url}/registry.v1.RegistryService/${method}?connect=v1&encoding=json&message=${encodeURIComponent(JSON.stringify({ did }))}`;

  it("resolves a name@version with GET, a strong ETag and a max-age; If-None-Match answers 304", async () => {
    const first = await fetch(getUrl(VERSIONED));
    expect(first.status).toBe(200);
    expect(((await first.json()) as { entry: { entryDid: string } }).entry.entryDid).toBe(VERSIONED);
    const etag = first.headers.get("etag");
    expect(etag).toMatch(/^"[A-Za-z0-9_-]{22}"$/);
    expect(first.headers.get("cache-control")).toBe("public, max-age=60");
    const again = await fetch(getUrl(VERSIONED), { headers: { "if-none-match": etag as string } });
    expect(again.status).toBe(304);
    expect(again.headers.get("etag")).toBe(etag);
    const other = await fetch(getUrl(VERSIONED), { headers: { "if-none-match": '"someone-else"' } });
    expect(other.status).toBe(200);
  });

  it("latest and version lists are revalidated every time (no-cache, ETag)", async () => {
    const latest = await fetch(getUrl(DID));
    expect(latest.headers.get("cache-control")).toBe("no-cache");
    expect(latest.headers.get("etag")).not.toBeNull();
    const versions = await fetch(getUrl(DID, "ListEntryVersions"));
    expect(versions.status).toBe(200);
    expect(versions.headers.get("cache-control")).toBe("no-cache");
  });

  it("binary GET with base64 messages; the JWKS too; GET on a method with side effects is 405 with Allow", async () => {
    const message = Buffer.from(resolveBytes(VERSIONED)).toString("base64url");
    const binary = await fetch(`${registry.url}${RESOLVE}?connect=v1&encoding=proto&base64=1&message=${message}`);
    expect(binary.status).toBe(200);
    expect(fromBinary(ResolveEntryResponseSchema, new Uint8Array(await binary.arrayBuffer())).entry?.entryDid).toBe(VERSIONED);
    const jwks = await fetch(`${registry.url}/auth.v1.TokenService/GetJwks?connect=v1&encoding=json&message=%7B%7D`);
    expect(jwks.status).toBe(200);
    expect(((await jwks.json()) as { keys: unknown[] }).keys.length).toBeGreaterThan(0);
    const create = await fetch(`${registry.url}/registry.v1.RegistryService/CreateEntry?connect=v1&encoding=json&message=%7B%7D`);
    expect(create.status).toBe(405);
    expect(create.headers.get("allow")).toBe("POST");
  });

  it("Connect-Web's useHttpGet client works end to end", async () => {
    const client = createClient(RegistryService, createConnectTransport({ baseUrl: registry.url, httpVersion: "1.1", useHttpGet: true }));
    const seen: string[] = [];
    const response = await client.resolveEntry({ did: VERSIONED }, { onHeader: (h) => seen.push(h.get("etag") ?? "") });
    expect(response.entry?.entryDid).toBe(VERSIONED);
    expect(seen[0]).toMatch(/^"/);
  });

  it("REST GET: the same ETag rules, with 304, and HEAD", async () => {
    const path = `${registry.url}/v1/entries/${encodeURIComponent(VERSIONED)}`;
    const first = await fetch(path);
    expect(first.headers.get("cache-control")).toBe("public, max-age=60");
    const etag = first.headers.get("etag") as string;
    expect((await fetch(path, { headers: { "if-none-match": `W/${etag}` } })).status).toBe(304);
    const head = await fetch(path, { method: "HEAD" });
    expect(head.status).toBe(200);
    expect(head.headers.get("etag")).toBe(etag);
    expect((await fetch(`${registry.url}/v1/entries/${DID}`)).headers.get("cache-control")).toBe("no-cache");
  });

  it("a revocation changes the ETag, so a validator never confirms a stale entry", async () => {
    const publisher = await createPublisher();
    const token = await registry.accessToken(publisher.did, ["registry.publish.skill"]);
    const did = "did:reg:main:skill:etag-revoke@1.0.0";
    const headers = { authorization: `Bearer ${token}`, "content-type": "application/json" };
    await fetch(`${registry.url}/v1/entries`, {
      method: "POST",
      headers,
      body: JSON.stringify(await publisher.entry("etag-revoke", "1.0.0")),
    });
    const before = (await fetch(`${registry.url}/v1/entries/${encodeURIComponent(did)}`)).headers.get("etag") as string;
    const revoked = await fetch(`${registry.url}/v1/entries/${encodeURIComponent(did)}`, {
      method: "DELETE",
      headers,
      body: JSON.stringify(await publisher.revocation(did, "superseded")),
    });
    expect(revoked.status).toBe(200);
    const after = await fetch(`${registry.url}/v1/entries/${encodeURIComponent(did)}`, { headers: { "if-none-match": before } });
    expect(after.status).toBe(200);
    expect(((await after.json()) as { status: string }).status).toBe("revoked");
  });

  it("errors are never cached, and every answer says nosniff; tokens are no-store", async () => {
    const missing = await fetch(`${registry.url}/v1/entries/did:reg:main:skill:nothing-here`);
    expect(missing.status).toBe(404);
    expect(missing.headers.get("cache-control")).toBe("no-store");
    expect(missing.headers.get("x-content-type-options")).toBe("nosniff");
    const token = await fetch(`${registry.url}/v1/tokens`, { method: "POST", headers: { "content-type": "application/json" }, body: "{}" });
    expect(token.headers.get("cache-control")).toBe("no-store");
    const publisher = await createPublisher();
    const root = await registry.rootToken(publisher.did, ["registry.publish.skill"]);
    const issued = await fetch(`${registry.url}/v1/tokens`, {
      method: "POST",
      headers: { "content-type": "application/json", authorization: `Bearer ${root}` },
      body: JSON.stringify({ scopes: ["registry.publish.skill"] }),
    });
    expect(issued.status).toBe(200);
    expect(issued.headers.get("cache-control")).toBe("no-store");
    expect(issued.headers.get("x-content-type-options")).toBe("nosniff");
  });
});

describe("compression", () => {
  const discoverBody = JSON.stringify({ conditions: [{ field: "name", op: "=", value: "wire-test" }] });

  it("REST answers gzip or br by Accept-Encoding above 1 KiB, and identity below", async () => {
    for (const coding of ["gzip", "br"] as const) {
      const response = await rawHttp1(
        "POST",
        "/v1/discover",
        { "content-type": "application/json", "accept-encoding": coding },
        discoverBody,
      );
      expect(response.headers["content-encoding"]).toBe(coding);
      expect(response.headers.vary).toContain("Accept-Encoding");
      const plain = coding === "gzip" ? gunzipSync(response.body) : brotliDecompressSync(response.body);
      expect((JSON.parse(plain.toString()) as { entries: unknown[] }).entries).toHaveLength(2);
      expect(response.body.length).toBeLessThan(plain.length);
    }
    const small = await rawHttp1("GET", `/v1/entries/${encodeURIComponent(VERSIONED)}`, { "accept-encoding": "gzip, br" });
    expect(small.headers["content-encoding"]).toBeUndefined();
    const refused = await rawHttp1(
      "POST",
      "/v1/discover",
      { "content-type": "application/json", "accept-encoding": "gzip;q=0" },
      discoverBody,
    );
    expect(refused.headers["content-encoding"]).toBeUndefined();
  });

  it("REST reads gzip request bodies, and refuses unknown codings with 415", async () => {
    const zipped = await rawHttp1(
      "POST",
      "/v1/discover",
      { "content-type": "application/json", "content-encoding": "gzip" },
      gzipSync(discoverBody),
    );
    expect(zipped.status).toBe(200);
    const unknown = await rawHttp1(
      "POST",
      "/v1/discover",
      { "content-type": "application/json", "content-encoding": "zstd" },
      discoverBody,
    );
    expect(unknown.status).toBe(415);
  });

  it("Connect: gzip request and response", async () => {
    const response = await rawHttp1(
      "POST",
      "/registry.v1.RegistryService/DiscoverEntries",
      { "content-type": "application/json", "content-encoding": "gzip", "accept-encoding": "gzip" },
      gzipSync(discoverBody),
    );
    expect(response.status).toBe(200);
    expect(response.headers["content-encoding"]).toBe("gzip");
    expect((JSON.parse(gunzipSync(response.body).toString()) as { entries: unknown[] }).entries).toHaveLength(2);
  });

  it("gRPC: grpc-js with gzip both ways", async () => {
    const Client = grpcJsClientConstructor(RegistryService);
    const client = new Client(new URL(registry.url).host, grpc.credentials.createInsecure(), {
      "grpc.default_compression_algorithm": 2,
    }) as any;
    const response = await new Promise<any>((resolve, reject) =>
      client.DiscoverEntries(
        { $typeName: "registry.v1.DiscoverEntriesRequest", conditions: [], entryType: "", limit: 5, cursor: "" },
        (e: Error | null, r: any) => (e ? reject(e) : resolve(r)),
      ),
    );
    expect(response.entries.length).toBeGreaterThan(0);
    client.close();
    const raw = await h2Request(
      registry.url,
      {
        ":method": "POST",
        ":path": "/registry.v1.RegistryService/DiscoverEntries",
        "content-type": "application/grpc",
        "grpc-accept-encoding": "gzip",
        te: "trailers",
      },
      envelope(new Uint8Array()),
    );
    expect(raw.headers["grpc-encoding"]).toBe("gzip");
    expect(raw.body[0]).toBe(1);
    expect(raw.trailers["grpc-status"]).toBe("0");
  });
});

describe("unknown methods are unimplemented in the caller's protocol", () => {
  it("gRPC (grpc-js) sees UNIMPLEMENTED", async () => {
    const client = new grpc.Client(new URL(registry.url).host, grpc.credentials.createInsecure());
    const error = await new Promise<grpc.ServiceError>((resolve) =>
      client.makeUnaryRequest(
        "/registry.v1.RegistryService/Nope",
        (x: Buffer) => x,
        (x: Buffer) => x,
        Buffer.alloc(0),
        (e) => resolve(e as grpc.ServiceError),
      ),
    );
    expect(error.code).toBe(grpc.status.UNIMPLEMENTED);
    client.close();
  });

  it("Connect sees unimplemented; gRPC-Web a grpc-status of 12; a plain request REST's 404", async () => {
    const client = createClient(
      {
        ...TokenService,
        typeName: "nope.v1.Missing",
        methods: TokenService.methods.map((m) => ({ ...m, parent: { typeName: "nope.v1.Missing" } })),
      } as never,
      createConnectTransport({ baseUrl: registry.url, httpVersion: "1.1" }),
    ) as any;
    const error = await client.getJwks({}).catch((e: unknown) => e);
    expect(ConnectError.from(error).code).toBe(Code.Unimplemented);
    const web = await fetch(`${registry.url}/nope.v1.Missing/Call`, {
      method: "POST",
      headers: { "content-type": "application/grpc-web+proto" },
      body: envelope(new Uint8Array()),
    });
    expect(parseGrpcWeb(Buffer.from(await web.arrayBuffer())).trailers["grpc-status"]).toBe("12");
    const plain = await fetch(`${registry.url}/nope.v1.Missing/Call`);
    expect(plain.status).toBe(404);
    expect(((await plain.json()) as { code: string }).code).toBe("not_found");
  });
});

describe("gRPC-Web text", () => {
  it("answers application/grpc-web-text in base64, also for requests in several padded chunks", async () => {
    const frame = envelope(resolveBytes(VERSIONED));
    const chunked = frame.subarray(0, 4).toString("base64") + frame.subarray(4).toString("base64");
    for (const body of [frame.toString("base64"), chunked]) {
      const response = await fetch(`${registry.url}${RESOLVE}`, {
        method: "POST",
        headers: { "content-type": "application/grpc-web-text", "x-grpc-web": "1" },
        body,
      });
      expect(response.status).toBe(200);
      expect(response.headers.get("content-type")).toBe("application/grpc-web-text");
      const decoded = parseGrpcWeb(Buffer.from(await response.text(), "base64"));
      expect(decoded.trailers["grpc-status"]).toBe("0");
      expect(fromBinary(ResolveEntryResponseSchema, decoded.messages[0] as Buffer).entry?.entryDid).toBe(VERSIONED);
    }
    const garbage = await fetch(`${registry.url}${RESOLVE}`, {
      method: "POST",
      headers: { "content-type": "application/grpc-web-text" },
      body: "!!not base64!!",
    });
    expect(parseGrpcWeb(Buffer.from(await garbage.text(), "base64")).trailers["grpc-status"]).toBe("3");
  });
});

describe("bodies that do not decode are invalid_argument on every protocol, never internal", () => {
  const garbage = Buffer.from([0x0a, 0xff, 0xff, 0xff, 0xff, 0x0f, 0x01]);
  const badUtf8 = Buffer.from([0x0a, 0x02, 0xc3, 0x28]);

  it("gRPC", async () => {
    for (const payload of [garbage, badUtf8]) {
      const raw = await h2Request(
        registry.url,
        { ":method": "POST", ":path": RESOLVE, "content-type": "application/grpc", te: "trailers" },
        envelope(payload),
      );
      expect(raw.headers["grpc-status"] ?? raw.trailers["grpc-status"]).toBe("3");
    }
    const truncated = await h2Request(
      registry.url,
      { ":method": "POST", ":path": RESOLVE, "content-type": "application/grpc" },
      Buffer.from([0, 0, 0, 0, 9, 1]),
    );
    expect(truncated.headers["grpc-status"]).toBe("3");
  });

  it("Connect binary, gRPC-Web, Connect JSON and REST", async () => {
    for (const payload of [garbage, badUtf8]) {
      const connect = await fetch(`${registry.url}${RESOLVE}`, {
        method: "POST",
        headers: { "content-type": "application/proto" },
        body: payload,
      });
      expect(connect.status).toBe(400);
      const web = await fetch(`${registry.url}${RESOLVE}`, {
        method: "POST",
        headers: { "content-type": "application/grpc-web+proto" },
        body: envelope(payload),
      });
      expect(parseGrpcWeb(Buffer.from(await web.arrayBuffer())).trailers["grpc-status"]).toBe("3");
    }
    const notUtf8 = Buffer.concat([
      Buffer.from('{"conditions": [{"field": "name", "op": "=", "value": "'),
      Buffer.from([0xff, 0xfe]),
      Buffer.from('"}]}'),
    ]);
    const json = await fetch(`${registry.url}/registry.v1.RegistryService/DiscoverEntries`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: notUtf8,
    });
    expect(json.status).toBe(400);
    const rest = await fetch(`${registry.url}/v1/discover`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: notUtf8,
    });
    expect(rest.status).toBe(400);
    expect(((await rest.json()) as { message: string }).message).toContain("UTF-8");
  });
});

describe("body limits on every protocol; the connection stays usable after a refusal", () => {
  const big = "x".repeat(8000);

  it("Connect and gRPC-Web over HTTP/1.1 keep-alive: refused, then the next request on the same connection is answered", async () => {
    const agent = new http.Agent({ keepAlive: true, maxSockets: 1 });
    try {
      const tooBig = JSON.stringify({ did: big });
      const refused = await rawHttp1("POST", RESOLVE, { "content-type": "application/json" }, tooBig, agent);
      expect(refused.status).toBe(429);
      expect((JSON.parse(refused.body.toString()) as { code: string }).code).toBe("resource_exhausted");
      const next = await rawHttp1(
        "POST",
        RESOLVE,
        { "content-type": "application/json" },
        JSON.stringify({ did: VERSIONED }),
        agent,
        3_000,
      );
      expect(next.status).toBe(200);
      expect(next.socketReused).toBe(true);
      const web = await rawHttp1("POST", RESOLVE, { "content-type": "application/grpc-web+proto" }, envelope(resolveBytes(big)), agent);
      expect(parseGrpcWeb(web.body).trailers["grpc-status"]).toBe("8");
      const afterWeb = await rawHttp1(
        "POST",
        RESOLVE,
        { "content-type": "application/grpc-web+proto" },
        envelope(resolveBytes(VERSIONED)),
        agent,
        3_000,
      );
      expect(parseGrpcWeb(afterWeb.body).trailers["grpc-status"]).toBe("0");
    } finally {
      agent.destroy();
    }
  });

  it("a body far over the limit is refused at once with Connection: close, and the next request gets a new connection", async () => {
    const agent = new http.Agent({ keepAlive: true, maxSockets: 1 });
    try {
      for (const contentType of ["application/json", "application/grpc-web+proto"]) {
        const huge =
          contentType === "application/json" ? JSON.stringify({ did: "y".repeat(200_000) }) : envelope(resolveBytes("y".repeat(200_000)));
        const refused = await rawHttp1("POST", RESOLVE, { "content-type": contentType }, huge, agent, 3_000);
        expect(refused.headers.connection).toBe("close");
        const next = await rawHttp1(
          "POST",
          RESOLVE,
          { "content-type": "application/json" },
          JSON.stringify({ did: VERSIONED }),
          agent,
          3_000,
        );
        expect(next.status).toBe(200);
      }
    } finally {
      agent.destroy();
    }
  });

  it("gRPC: RESOURCE_EXHAUSTED; REST: 413", async () => {
    const raw = await h2Request(
      registry.url,
      { ":method": "POST", ":path": RESOLVE, "content-type": "application/grpc" },
      envelope(resolveBytes(big)),
    );
    expect(raw.headers["grpc-status"]).toBe("8");
    const rest = await fetch(`${registry.url}/v1/discover`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ entryType: big }),
    });
    expect(rest.status).toBe(413);
  });

  it("a small gzip body that inflates past the limit is refused, not inflated", async () => {
    const bomb = gzipSync(Buffer.alloc(1_000_000, 0x20));
    const response = await rawHttp1("POST", "/v1/discover", { "content-type": "application/json", "content-encoding": "gzip" }, bomb);
    expect(response.status).toBe(413);
  });
});

describe("REST path variables", () => {
  it("a query parameter naming a path field is refused, not a silent override", async () => {
    const response = await fetch(`${registry.url}/v1/entries/${encodeURIComponent(VERSIONED)}?did=did:reg:main:skill:other`);
    expect(response.status).toBe(400);
    expect(((await response.json()) as { message: string }).message).toContain("did");
  });
});

interface RawResponse {
  status: number;
  headers: http.IncomingHttpHeaders;
  body: Buffer;
  socketReused: boolean;
}

/** An HTTP/1.1 request with exact bytes and headers (fetch would add and decode encodings). */
function rawHttp1(
  method: string,
  path: string,
  headers: Record<string, string>,
  body?: string | Buffer,
  agent?: http.Agent,
  timeoutMs = 10_000,
): Promise<RawResponse> {
  const url = new URL(registry.url);
  return new Promise((resolve, reject) => {
    const request = http.request({ host: url.hostname, port: url.port, method, path, headers, agent: agent ?? false }, (response) => {
      const chunks: Buffer[] = [];
      response.on("data", (c: Buffer) => chunks.push(c));
      response.on("end", () =>
        resolve({
          status: response.statusCode ?? 0,
          headers: response.headers,
          body: Buffer.concat(chunks),
          socketReused: request.reusedSocket,
        }),
      );
    });
    request.setTimeout(timeoutMs, () => request.destroy(new Error(`no answer within ${timeoutMs} ms`)));
    request.on("error", reject);
    request.end(body);
  });
}
