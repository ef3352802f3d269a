import { getEventListeners } from "node:events";
import http2 from "node:http2";
import * as grpc from "@grpc/grpc-js";
import { create, toBinary } from "@bufbuild/protobuf";
import { Code, ConnectError, createClient, type HandlerContext } from "@connectrpc/connect";
import { createConnectTransport, createGrpcWebTransport } from "@connectrpc/connect-node";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { servedService } from "../../src/edge/served-services.js";
import { RegistryService, ResolveEntryRequestSchema } from "../../gen/registry/v1/registry_service_pb.js";
import { startEdgeTestServer, type EdgeTestServer } from "../support/edge-test-server.js";
import { grpcJsClientConstructor } from "../support/grpc-js-client.js";

// The edge around a test implementation of ResolveEntry whose behaviour the DID picks: "slow-*"
// waits until its signal aborts and records why; "headers" sets a response header and trailer;
// "signal" reads its signal and returns; "missing" fails with not_found.
const aborted = new Map<string, unknown>();
let edge: EdgeTestServer;

function resolveEntry(request: { did: string }, context: HandlerContext) {
  if (request.did.startsWith("slow-")) {
    const { signal } = context;
    return new Promise<{ entry?: undefined }>((resolve) => {
      signal.addEventListener("abort", () => {
        aborted.set(request.did, signal.reason);
        resolve({});
      });
    });
  }
  if (request.did === "headers") {
    context.responseHeader.set("x-answer-header", "h");
    context.responseTrailer.set("x-answer-trailer", "t");
  }
  if (request.did === "signal" && context.signal.aborted) throw new Error("unexpected abort");
  if (request.did === "missing") throw new ConnectError("no such entry", Code.NotFound);
  return { entry: { entryDid: request.did, version: "1.0.0" } };
}

beforeAll(async () => {
  edge = await startEdgeTestServer([servedService(RegistryService, { resolveEntry })]);
});
afterAll(async () => {
  await edge.close();
});

async function abortReasonOf(did: string): Promise<unknown> {
  for (let waited = 0; waited < 5_000; waited += 20) {
    if (aborted.has(did)) return aborted.get(did);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
  throw new Error(`the call for ${did} was never aborted`);
}

const connectClient = (kind: "connect" | "grpc-web", httpVersion: "1.1" | "2") => {
  const baseUrl = httpVersion === "2" ? edge.http2Url : edge.http1Url;
  const transport =
    kind === "connect" ? createConnectTransport({ baseUrl, httpVersion }) : createGrpcWebTransport({ baseUrl, httpVersion });
  return createClient(RegistryService, transport);
};

function grpcJsClient() {
  const Client = grpcJsClientConstructor(RegistryService);
  return new Client(new URL(edge.http2Url).host, grpc.credentials.createInsecure()) as any;
}

describe("cancellation when the client goes away", () => {
  it("REST: a client that disconnects cancels its call", async () => {
    const controller = new AbortController();
    const call = fetch(`${edge.http1Url}/v1/entries/slow-rest`, { signal: controller.signal }).catch((e) => e);
    setTimeout(() => controller.abort(), 150);
    await call;
    const reason = await abortReasonOf("slow-rest");
    expect(reason).toBeInstanceOf(ConnectError);
    expect((reason as ConnectError).code).toBe(Code.Canceled);
  });

  for (const [kind, version] of [
    ["connect", "1.1"],
    ["connect", "2"],
    ["grpc-web", "1.1"],
    ["grpc-web", "2"],
  ] as const) {
    it(`${kind} over HTTP/${version}: an aborted call cancels the implementation's signal`, async () => {
      const did = `slow-${kind}-${version}`;
      const controller = new AbortController();
      const call = connectClient(kind, version)
        .resolveEntry({ did }, { signal: controller.signal })
        .catch((e) => e);
      setTimeout(() => controller.abort(), 150);
      expect(await call).toBeInstanceOf(ConnectError);
      expect(((await abortReasonOf(did)) as ConnectError).code).toBe(Code.Canceled);
    });
  }

  it("gRPC (grpc-js): a cancelled call cancels the implementation's signal", async () => {
    const client = grpcJsClient();
    const call = client.ResolveEntry(create(ResolveEntryRequestSchema, { did: "slow-grpc" }), () => {});
    setTimeout(() => call.cancel(), 150);
    expect(((await abortReasonOf("slow-grpc")) as ConnectError).code).toBe(Code.Canceled);
    client.close();
  });
});

describe("deadlines", () => {
  it("gRPC (grpc-js): a call past its deadline fails with DEADLINE_EXCEEDED", async () => {
    const client = grpcJsClient();
    const error = await new Promise<grpc.ServiceError>((resolve) =>
      client.ResolveEntry(
        create(ResolveEntryRequestSchema, { did: "slow-deadline-grpc-js" }),
        new grpc.Metadata(),
        { deadline: Date.now() + 300 },
        (e: grpc.ServiceError) => resolve(e),
      ),
    );
    expect(error.code).toBe(grpc.status.DEADLINE_EXCEEDED);
    client.close();
  });

  it("gRPC: the server ends a call at its grpc-timeout, in the trailers, and aborts the implementation", async () => {
    const message = toBinary(ResolveEntryRequestSchema, create(ResolveEntryRequestSchema, { did: "slow-deadline-grpc" }));
    const client = http2.connect(edge.http2Url);
    const stream = client.request({
      ":method": "POST",
      ":path": "/registry.v1.RegistryService/ResolveEntry",
      "content-type": "application/grpc",
      "grpc-timeout": "300m",
    });
    const status = new Promise<string | undefined>((resolve) => {
      let fromHeaders: string | undefined;
      stream.on("response", (headers) => (fromHeaders = headers["grpc-status"] as string | undefined));
      stream.on("trailers", (trailers) => resolve(trailers["grpc-status"] as string));
      stream.on("close", () => resolve(fromHeaders));
      stream.resume();
    });
    stream.end(Buffer.concat([Buffer.from([0, 0, 0, 0, message.length]), message]));
    expect(await status).toBe("4");
    client.close();
    expect(((await abortReasonOf("slow-deadline-grpc")) as ConnectError).code).toBe(Code.DeadlineExceeded);
  });

  // Raw requests: a client library would give up at its own deadline, and the server would then
  // see a cancelled call rather than a deadline of its own.
  it("Connect: connect-timeout-ms ends the call with deadline_exceeded (504)", async () => {
    const response = await fetch(`${edge.http1Url}/registry.v1.RegistryService/ResolveEntry`, {
      method: "POST",
      headers: { "content-type": "application/json", "connect-timeout-ms": "300" },
      body: JSON.stringify({ did: "slow-deadline-connect" }),
    });
    expect(response.status).toBe(504);
    expect(((await response.json()) as { code: string }).code).toBe("deadline_exceeded");
    expect(((await abortReasonOf("slow-deadline-connect")) as ConnectError).code).toBe(Code.DeadlineExceeded);
  });

  it("gRPC-Web: grpc-timeout ends the call with DEADLINE_EXCEEDED in the trailer frame", async () => {
    const message = toBinary(ResolveEntryRequestSchema, create(ResolveEntryRequestSchema, { did: "slow-deadline-web" }));
    const response = await fetch(`${edge.http1Url}/registry.v1.RegistryService/ResolveEntry`, {
      method: "POST",
      headers: { "content-type": "application/grpc-web+proto", "grpc-timeout": "300m" },
      body: Buffer.concat([Buffer.from([0, 0, 0, 0, message.length]), message]),
    });
    const body = Buffer.from(await response.arrayBuffer());
    expect(body[0]).toBe(0x80);
    expect(body.subarray(5).toString()).toContain("grpc-status: 4");
    expect(((await abortReasonOf("slow-deadline-web")) as ConnectError).code).toBe(Code.DeadlineExceeded);
  });

  it("Connect: a malformed timeout header is invalid_argument", async () => {
    const response = await fetch(`${edge.http1Url}/registry.v1.RegistryService/ResolveEntry`, {
      method: "POST",
      headers: { "content-type": "application/json", "connect-timeout-ms": "soon" },
      body: JSON.stringify({ did: "signal" }),
    });
    expect(response.status).toBe(400);
    expect(((await response.json()) as { code: string }).code).toBe("invalid_argument");
  });
});

describe("headers and trailers set by the implementation", () => {
  for (const [kind, version] of [
    ["connect", "1.1"],
    ["connect", "2"],
    ["grpc-web", "1.1"],
    ["grpc-web", "2"],
  ] as const) {
    it(`${kind} over HTTP/${version}`, async () => {
      let header: Headers | undefined;
      let trailer: Headers | undefined;
      await connectClient(kind, version).resolveEntry(
        { did: "headers" },
        { onHeader: (h) => (header = h), onTrailer: (t) => (trailer = t) },
      );
      expect(header?.get("x-answer-header")).toBe("h");
      expect(trailer?.get("x-answer-trailer")).toBe("t");
    });
  }

  it("gRPC (grpc-js): metadata in the headers, and in the trailers", async () => {
    const client = grpcJsClient();
    const seen = await new Promise<{ header: grpc.Metadata; trailer: grpc.Metadata }>((resolve, reject) => {
      let header: grpc.Metadata;
      const call = client.ResolveEntry(create(ResolveEntryRequestSchema, { did: "headers" }), (e: Error | null) => {
        if (e !== null) reject(e);
      });
      call.on("metadata", (m: grpc.Metadata) => (header = m));
      call.on("status", (s: grpc.StatusObject) => resolve({ header, trailer: s.metadata }));
    });
    expect(seen.header.get("x-answer-header")).toEqual(["h"]);
    expect(seen.trailer.get("x-answer-trailer")).toEqual(["t"]);
    client.close();
  });

  it("REST: the header", async () => {
    const response = await fetch(`${edge.http1Url}/v1/entries/headers`);
    expect(response.headers.get("x-answer-header")).toBe("h");
  });
});

it("leaves nothing listening on the shutdown signal once calls finish, failed ones included", async () => {
  const connect = connectClient("connect", "1.1");
  for (let round = 0; round < 50; round++) {
    const ok = await fetch(`${edge.http1Url}/v1/entries/signal`);
    expect(ok.status).toBe(200);
    await ok.json();
    const missing = await fetch(`${edge.http1Url}/v1/entries/missing`);
    expect(missing.status).toBe(404);
    await missing.json();
    await connect.resolveEntry({ did: "signal" });
  }
  expect(getEventListeners(edge.shutdown.signal, "abort")).toHaveLength(0);
});
