import { execFile } from "node:child_process";
import http from "node:http";
import http2 from "node:http2";
import * as grpc from "@grpc/grpc-js";
import { create, fromBinary, toBinary } from "@bufbuild/protobuf";
import { Code, ConnectError, createClient, type Interceptor } from "@connectrpc/connect";
import { compressionGzip, createConnectTransport, createGrpcTransport, createGrpcWebTransport } from "@connectrpc/connect-node";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { servedService } from "../../src/edge/served-services.js";
import { BadRequestSchema } from "../../gen/google/rpc/error_details_pb.js";
import { StatusSchema } from "../../gen/google/rpc/status_pb.js";
import { RegistryService, ResolveEntryRequestSchema } from "../../gen/registry/v1/registry_service_pb.js";
import { startEdgeTestServer, type EdgeTestServer } from "../support/edge-test-server.js";
import { grpcJsClientConstructor } from "../support/grpc-js-client.js";

/**
 * Wire rules of the transport (src/transport) that clients depend on, each seen by at least two
 * independent clients: grpc-js, Connect's node clients, curl, and raw HTTP/1.1 and HTTP/2.
 * The service is a test ResolveEntry whose DID picks its behaviour: "wait-<ms>" answers after that
 * long, "details" fails with a google.rpc.BadRequest detail, "metadata" fails with metadata that
 * names the protocol's own headers, "big-*" answers with more than 1 KiB; any other DID is
 * answered at once.
 */

const PATH = "/registry.v1.RegistryService/ResolveEntry";
const DETAILED_MESSAGE = "did: names no entry here";
const BAD_REQUEST = create(BadRequestSchema, { fieldViolations: [{ field: "did", description: "names no entry" }] });
/** Metadata that, copied as it is, would say the answer is HTML, gzip-coded, 3 bytes long and fine. */
const HOSTILE_METADATA = {
  "content-type": "text/html",
  "content-encoding": "gzip",
  "content-length": "3",
  "grpc-status": "0",
  "grpc-message": "fine",
  "grpc-encoding": "gzip",
  "connect-protocol-version": "9",
  "x-kept": "yes",
};

async function resolveEntry(request: { did: string }) {
  const wait = /^wait-(\d+)$/.exec(request.did);
  if (wait !== null) await new Promise((resolve) => setTimeout(resolve, Number(wait[1])));
  if (request.did === "details") {
    throw new ConnectError(DETAILED_MESSAGE, Code.InvalidArgument, undefined, [{ desc: BadRequestSchema, value: BAD_REQUEST }]);
  }
  if (request.did === "metadata") throw new ConnectError("refused", Code.PermissionDenied, HOSTILE_METADATA);
  const description = request.did.startsWith("big-") ? "a long description ".repeat(100) : "";
  return { entry: { entryDid: request.did, version: "1.0.0", description } };
}

let edge: EdgeTestServer;
beforeAll(async () => {
  edge = await startEdgeTestServer([servedService(RegistryService, { resolveEntry })]);
});
afterAll(async () => {
  await edge.close();
});

function requestBytes(did: string): Buffer {
  return Buffer.from(toBinary(ResolveEntryRequestSchema, create(ResolveEntryRequestSchema, { did })));
}

function frame(did: string): Buffer {
  const message = requestBytes(did);
  const header = Buffer.alloc(5);
  header.writeUInt32BE(message.length, 1);
  return Buffer.concat([header, message]);
}

interface RawAnswer {
  readonly headers: Record<string, string | string[] | number | undefined>;
  readonly trailers: Record<string, string | string[] | undefined>;
  readonly body: Buffer;
}

/** One request over a fresh h2c connection, its body sent `delayMs` after its headers. */
function rawHttp2(headers: Record<string, string>, body: Buffer, delayMs = 0): Promise<RawAnswer> {
  const session = http2.connect(edge.http2Url);
  session.on("error", () => {});
  return new Promise<RawAnswer>((resolve, reject) => {
    const stream = session.request({ ":method": "POST", ":path": PATH, ...headers });
    let answerHeaders: RawAnswer["headers"] = {};
    let trailers: RawAnswer["trailers"] = {};
    const chunks: Buffer[] = [];
    stream.on("response", (received) => (answerHeaders = received));
    stream.on("trailers", (received) => (trailers = received));
    stream.on("data", (chunk: Buffer) => chunks.push(chunk));
    stream.on("end", () => resolve({ headers: answerHeaders, trailers, body: Buffer.concat(chunks) }));
    stream.on("error", reject);
    if (delayMs === 0) stream.end(body);
    else setTimeout(() => stream.end(body), delayMs);
  }).finally(() => session.close());
}

/** One request over HTTP/1.1, its body sent `delayMs` after its headers. */
function rawHttp1(
  headers: Record<string, string>,
  body: Buffer,
  delayMs = 0,
): Promise<{ status: number; headers: http.IncomingHttpHeaders; body: Buffer }> {
  return new Promise((resolve, reject) => {
    const request = http.request(
      `${edge.http1Url}${PATH}`,
      { method: "POST", headers: { ...headers, "content-length": String(body.length) } },
      (response) => {
        const chunks: Buffer[] = [];
        response.on("data", (chunk: Buffer) => chunks.push(chunk));
        response.on("end", () => resolve({ status: response.statusCode ?? 0, headers: response.headers, body: Buffer.concat(chunks) }));
      },
    );
    request.on("error", reject);
    request.flushHeaders();
    if (delayMs === 0) request.end(body);
    else setTimeout(() => request.end(body), delayMs);
  });
}

/** The header lines of a gRPC-Web body's trailer frame. */
function webTrailers(body: Buffer): Record<string, string> {
  let offset = 0;
  while (offset < body.length) {
    const length = body.readUInt32BE(offset + 1);
    if ((body[offset] as number) & 0x80) {
      const lines = body
        .subarray(offset + 5, offset + 5 + length)
        .toString("latin1")
        .split("\r\n")
        .filter(Boolean);
      return Object.fromEntries(
        lines.map((line) => [line.slice(0, line.indexOf(":")).toLowerCase(), line.slice(line.indexOf(":") + 1).trim()]),
      );
    }
    offset += 5 + length;
  }
  throw new Error("the body has no trailer frame");
}

function grpcJsCall(did: string, deadline?: number): Promise<{ error: grpc.ServiceError | null }> {
  const Client = grpcJsClientConstructor(RegistryService);
  const client = new Client(new URL(edge.http2Url).host, grpc.credentials.createInsecure()) as any;
  return new Promise<{ error: grpc.ServiceError | null }>((resolve) =>
    client.ResolveEntry(
      create(ResolveEntryRequestSchema, { did }),
      new grpc.Metadata(),
      deadline === undefined ? {} : { deadline },
      (error: grpc.ServiceError | null) => resolve({ error }),
    ),
  ).finally(() => client.close());
}

function connectError(call: Promise<unknown>): Promise<ConnectError> {
  return call.then(
    () => {
      throw new Error("the call succeeded");
    },
    (error: unknown) => ConnectError.from(error),
  );
}

const THIRTY_DAYS_MS = 30 * 24 * 3_600_000;

describe("deadlines", () => {
  // node fires a timer set beyond 2^31-1 ms after 1 ms: such a deadline must not end a call that
  // takes longer than that. The call here takes 200 ms.
  it("a deadline beyond node's longest timer does not end the call early", async () => {
    // grpc-js sends grpc-timeout: 2592000S for thirty days.
    expect((await grpcJsCall("wait-200", Date.now() + THIRTY_DAYS_MS)).error).toBeNull();
    const grpcAnswer = await rawHttp2(
      { "content-type": "application/grpc", te: "trailers", "grpc-timeout": "2592000S" },
      frame("wait-200"),
    );
    expect(grpcAnswer.trailers["grpc-status"]).toBe("0");
    const connectAnswer = await rawHttp1(
      { "content-type": "application/proto", "connect-timeout-ms": "3000000000" },
      requestBytes("wait-200"),
    );
    expect(connectAnswer.status).toBe(200);
    const webAnswer = await rawHttp1({ "content-type": "application/grpc-web+proto", "grpc-timeout": "99999999H" }, frame("wait-200"));
    expect(webTrailers(webAnswer.body)["grpc-status"]).toBe("0");
  });

  it("a deadline counts from when the request arrived: a body slower than it gets deadline_exceeded at the deadline", async () => {
    // The body follows its headers 3 s later; the deadline is 300 ms.
    const startedAt = performance.now();
    const grpcAnswer = await rawHttp2(
      { "content-type": "application/grpc", te: "trailers", "grpc-timeout": "300m" },
      frame("at-once"),
      3_000,
    );
    expect({ ...grpcAnswer.headers, ...grpcAnswer.trailers }["grpc-status"]).toBe(String(Code.DeadlineExceeded));
    expect(performance.now() - startedAt).toBeLessThan(2_000);
    const connectStartedAt = performance.now();
    const connectAnswer = await rawHttp1(
      { "content-type": "application/json", "connect-timeout-ms": "300" },
      Buffer.from('{"did":"at-once"}'),
      3_000,
    );
    expect(connectAnswer.status).toBe(504);
    expect(JSON.parse(connectAnswer.body.toString())).toMatchObject({ code: "deadline_exceeded" });
    expect(performance.now() - connectStartedAt).toBeLessThan(2_000);
  });
});

describe("gRPC status", () => {
  it("carries its details as unpadded base64 (-bin), which clients decode", async () => {
    const expected = toBinary(
      StatusSchema,
      create(StatusSchema, {
        code: Code.InvalidArgument,
        message: DETAILED_MESSAGE,
        details: [{ typeUrl: "type.googleapis.com/google.rpc.BadRequest", value: toBinary(BadRequestSchema, BAD_REQUEST) }],
      }),
    );
    // Padded base64 of these bytes would end in "=": the check below can tell the two apart.
    expect(expected.length % 3).not.toBe(0);
    const unpadded = Buffer.from(expected).toString("base64").replace(/=+$/, "");

    const grpcAnswer = await rawHttp2({ "content-type": "application/grpc", te: "trailers" }, frame("details"));
    expect(grpcAnswer.headers["grpc-status-details-bin"]).toBe(unpadded);
    const webAnswer = await rawHttp1({ "content-type": "application/grpc-web+proto" }, frame("details"));
    expect(webTrailers(webAnswer.body)["grpc-status-details-bin"]).toBe(unpadded);

    const { error } = await grpcJsCall("details");
    const fromGrpcJs = fromBinary(StatusSchema, error?.metadata.get("grpc-status-details-bin")[0] as Buffer);
    expect(fromGrpcJs.details.map((detail) => fromBinary(BadRequestSchema, detail.value))).toEqual([BAD_REQUEST]);
    const fromConnect = await connectError(
      createClient(RegistryService, createGrpcTransport({ baseUrl: edge.http2Url })).resolveEntry({ did: "details" }),
    );
    expect(fromConnect.findDetails(BadRequestSchema)).toEqual([BAD_REQUEST]);
  });
});

describe("an error's metadata", () => {
  it("reaches the client, without replacing the protocol's own headers", async () => {
    const { error } = await grpcJsCall("metadata");
    expect({ code: error?.code, details: error?.details, kept: error?.metadata.get("x-kept") }).toEqual({
      code: grpc.status.PERMISSION_DENIED,
      details: "refused",
      kept: ["yes"],
    });
    const grpcAnswer = await rawHttp2({ "content-type": "application/grpc", te: "trailers" }, frame("metadata"));
    expect(grpcAnswer.headers).toMatchObject({
      "content-type": "application/grpc",
      "grpc-status": "7",
      "grpc-message": "refused",
      "x-kept": "yes",
    });
    expect(grpcAnswer.headers["content-length"]).toBeUndefined();
    expect(grpcAnswer.headers["grpc-encoding"]).toBeUndefined();

    for (const transport of [
      createConnectTransport({ baseUrl: edge.http1Url, httpVersion: "1.1" }),
      createGrpcWebTransport({ baseUrl: edge.http1Url, httpVersion: "1.1" }),
    ]) {
      const fromConnect = await connectError(createClient(RegistryService, transport).resolveEntry({ did: "metadata" }));
      expect({ code: fromConnect.code, message: fromConnect.rawMessage, kept: fromConnect.metadata.get("x-kept") }).toEqual({
        code: Code.PermissionDenied,
        message: "refused",
        kept: "yes",
      });
    }
    const connectAnswer = await rawHttp1({ "content-type": "application/json" }, Buffer.from('{"did":"metadata"}'));
    expect(connectAnswer.status).toBe(403);
    expect(connectAnswer.headers).toMatchObject({ "content-type": "application/json", "x-kept": "yes" });
    expect(connectAnswer.headers["content-encoding"]).toBeUndefined();
    expect(connectAnswer.headers["connect-protocol-version"]).toBeUndefined();
    expect(JSON.parse(connectAnswer.body.toString())).toMatchObject({ code: "permission_denied", message: "refused" });

    const restAnswer = await fetch(`${edge.http1Url}/v1/entries/metadata`);
    expect(restAnswer.status).toBe(403);
    expect(restAnswer.headers.get("content-type")).toBe("application/json");
    expect(restAnswer.headers.get("content-encoding")).toBeNull();
    expect(restAnswer.headers.get("x-kept")).toBe("yes");
    expect(await restAnswer.json()).toMatchObject({ code: "permission_denied", message: "refused" });
  });
});

describe("a gRPC answer", () => {
  it("has no content-length, so curl reads on to the trailers that carry grpc-status", async () => {
    const grpcAnswer = await rawHttp2({ "content-type": "application/grpc", te: "trailers" }, frame("at-once"));
    expect(grpcAnswer.headers["content-length"]).toBeUndefined();
    expect(grpcAnswer.trailers["grpc-status"]).toBe("0");
    expect(grpcAnswer.body.length).toBeGreaterThan(5);

    const viaCurl = await curl(edge.http2Url, ["content-type: application/grpc", "te: trailers"], frame("at-once"), {
      http2: true,
      withBody: false,
    });
    expect(viaCurl).toMatch(/^grpc-status: 0\r?$/m);

    // Answers without trailers keep theirs.
    const connectAnswer = await rawHttp1({ "content-type": "application/proto" }, requestBytes("at-once"));
    expect(Number(connectAnswer.headers["content-length"])).toBe(connectAnswer.body.length);
  });
});

describe("content codings", () => {
  it("are negotiated with Connect's clients on Connect, gRPC and gRPC-Web, gzip both ways", async () => {
    const codings: (string | null)[] = [];
    const recordCoding: Interceptor = (next) => async (request) => {
      const response = await next(request);
      codings.push(response.header.get("content-encoding") ?? response.header.get("grpc-encoding"));
      return response;
    };
    const options = {
      sendCompression: compressionGzip,
      acceptCompression: [compressionGzip],
      compressMinBytes: 0,
      interceptors: [recordCoding],
    };
    const transports = [
      createConnectTransport({ baseUrl: edge.http1Url, httpVersion: "1.1", ...options }),
      createGrpcTransport({ baseUrl: edge.http2Url, ...options }),
      createGrpcWebTransport({ baseUrl: edge.http1Url, httpVersion: "1.1", ...options }),
    ];
    for (const transport of transports) {
      const answer = await createClient(RegistryService, transport).resolveEntry({ did: "big-coded" });
      expect(answer.entry?.description).toBe("a long description ".repeat(100));
    }
    expect(codings).toEqual(["gzip", "gzip", "gzip"]);
  });
});

/** curl's output for one POST of `body` to the test method: the answer's headers, its body (or not), then any trailers. */
function curl(url: string, headers: readonly string[], body: Buffer, options: { http2: boolean; withBody: boolean }): Promise<string> {
  const args = [
    "-sS",
    "-D",
    "-",
    ...(options.http2 ? ["--http2-prior-knowledge"] : []),
    ...(options.withBody ? [] : ["-o", "/dev/null"]),
    ...headers.flatMap((header) => ["-H", header]),
  ];
  return new Promise<string>((resolve, reject) => {
    const child = execFile("curl", [...args, "--data-binary", "@-", `${url}${PATH}`], (error, stdout) =>
      error === null ? resolve(stdout) : reject(error),
    );
    child.stdin?.end(body);
  });
}

describe("gRPC-Web text", () => {
  it("answers in base64 and reads requests sent as several padded base64 chunks", async () => {
    const whole = frame("text-entry");
    // A client that base64-encodes each write sends padded chunks one after another.
    const chunked = Buffer.from(whole.subarray(0, 4).toString("base64") + whole.subarray(4).toString("base64"));
    expect(chunked.toString()).toMatch(/=[A-Za-z0-9+/]/);
    for (const body of [Buffer.from(whole.toString("base64")), chunked]) {
      const viaCurl = await curl(edge.http1Url, ["content-type: application/grpc-web-text", "x-grpc-web: 1"], body, {
        http2: false,
        withBody: true,
      });
      const [head = "", text = ""] = viaCurl.split(/\r\n\r\n/);
      expect(head).toMatch(/^content-type: application\/grpc-web-text\r?$/im);
      const fromCurl = Buffer.from(text, "base64");
      expect(webTrailers(fromCurl)["grpc-status"]).toBe("0");
      expect(fromCurl.includes(Buffer.from("text-entry"))).toBe(true);

      const viaHttp2 = await rawHttp2({ "content-type": "application/grpc-web-text", "x-grpc-web": "1" }, body);
      expect(viaHttp2.headers["content-type"]).toBe("application/grpc-web-text");
      expect(webTrailers(Buffer.from(viaHttp2.body.toString("latin1"), "base64"))["grpc-status"]).toBe("0");
    }
  });
});
