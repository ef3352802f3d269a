import { create, createFileRegistry, fromBinary, type DescService } from "@bufbuild/protobuf";
import { FileDescriptorProtoSchema, FileDescriptorSetSchema, type FileDescriptorProto } from "@bufbuild/protobuf/wkt";
import { Code, ConnectError, createClient, type ConnectRouter, type Transport } from "@connectrpc/connect";
import { createWritableIterable } from "@connectrpc/connect/protocol";
import { connectNodeAdapter, createGrpcTransport } from "@connectrpc/connect-node";
import { execFile } from "node:child_process";
import * as http2 from "node:http2";
import type { AddressInfo } from "node:net";
import { fileURLToPath } from "node:url";
import { promisify } from "node:util";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { TokenService } from "../../gen/auth/v1/token_service_pb.js";
import { Health, HealthCheckResponse_ServingStatus as ServingStatus } from "../../gen/grpc/health/v1/health_pb.js";
import {
  ServerReflection,
  ServerReflectionRequestSchema,
  type ServerReflectionRequest,
  type ServerReflectionResponse,
} from "../../gen/grpc/reflection/v1/reflection_pb.js";
import {
  ServerReflection as ServerReflectionV1alpha,
  ServerReflectionRequestSchema as ServerReflectionRequestV1alphaSchema,
} from "../../gen/grpc/reflection/v1alpha/reflection_pb.js";
import { RegistryService } from "../../gen/registry/v1/registry_service_pb.js";
import { createHealthService } from "../../src/edge/health-service.js";
import { registerReflection } from "../../src/edge/reflection-service.js";

const run = promisify(execFile);
const BUF = fileURLToPath(new URL("../../node_modules/.bin/buf", import.meta.url));

interface TestServer {
  readonly baseUrl: string;
  readonly transport: Transport;
  close(): Promise<void>;
}

async function startServer(check: () => Promise<boolean>): Promise<TestServer> {
  const served: DescService[] = [RegistryService, TokenService, Health];
  const routes = (router: ConnectRouter) => {
    router.service(RegistryService, {});
    router.service(TokenService, {});
    router.service(
      Health,
      createHealthService(check, {
        services: served.map((s) => s.typeName),
        watchIntervalMs: 20,
      }),
    );
    registerReflection(router, served);
  };
  const server = http2.createServer(connectNodeAdapter({ routes }));
  // Open client sessions would keep close() waiting forever.
  const sessions = new Set<http2.ServerHttp2Session>();
  server.on("session", (s) => {
    sessions.add(s);
    s.once("close", () => sessions.delete(s));
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as AddressInfo;
  const baseUrl = `http://127.0.0.1:${port}`;
  return {
    baseUrl,
    transport: createGrpcTransport({ baseUrl }),
    close: () =>
      new Promise<void>((resolve, reject) => {
        for (const s of sessions) s.destroy();
        server.close((err) => (err ? reject(err) : resolve()));
      }),
  };
}

async function bufCurl(...args: string[]): Promise<{ stdout: string; stderr: string }> {
  return run(BUF, ["curl", "--protocol", "grpc", "--http2-prior-knowledge", ...args], {
    timeout: 30_000,
  });
}

/** Sends each request only after the previous answer arrived, as reflection clients do. */
async function converse(transport: Transport, requests: ServerReflectionRequest["messageRequest"][]): Promise<ServerReflectionResponse[]> {
  const input = createWritableIterable<ServerReflectionRequest>();
  const output = createClient(ServerReflection, transport).serverReflectionInfo(input)[Symbol.asyncIterator]();
  const answers: ServerReflectionResponse[] = [];
  try {
    for (const messageRequest of requests) {
      const written = input.write(create(ServerReflectionRequestSchema, { messageRequest }));
      const next = await output.next();
      await written;
      if (next.done) throw new Error("stream ended early");
      answers.push(next.value);
    }
  } finally {
    input.close();
  }
  expect((await output.next()).done).toBe(true);
  return answers;
}

/**
 * The files with every import before its importers, as a client links them. (protobuf-es's
 * resolver form of createFileRegistry misorders a file imported by two others.)
 */
function dependencyOrder(files: readonly FileDescriptorProto[]): FileDescriptorProto[] {
  const byName = new Map(files.map((f) => [f.name, f]));
  const ordered: FileDescriptorProto[] = [];
  const visit = (file: FileDescriptorProto | undefined) => {
    if (file === undefined || ordered.includes(file)) return;
    for (const name of file.dependency) visit(byName.get(name));
    ordered.push(file);
  };
  files.forEach(visit);
  return ordered;
}

function decodeFiles(response: ServerReflectionResponse): FileDescriptorProto[] {
  if (response.messageResponse.case !== "fileDescriptorResponse") {
    throw new Error(`expected file descriptors, got ${response.messageResponse.case}`);
  }
  return response.messageResponse.value.fileDescriptorProto.map((bytes) => fromBinary(FileDescriptorProtoSchema, bytes));
}

describe("gRPC reflection and health", () => {
  let healthy = true;
  let failing = false;
  let server: TestServer;

  beforeAll(async () => {
    server = await startServer(async () => {
      if (failing) throw new Error("database unreachable");
      return healthy;
    });
  });

  afterAll(async () => {
    await server?.close();
  });

  describe("reflection v1 over a Connect gRPC client", () => {
    it("lists the served services, reflection and health included", async () => {
      const [answer] = await converse(server.transport, [{ case: "listServices", value: "" }]);
      expect(answer?.messageResponse.case).toBe("listServicesResponse");
      const names = answer?.messageResponse.case === "listServicesResponse" ? answer.messageResponse.value.service.map((s) => s.name) : [];
      expect(names.sort()).toEqual(
        [
          "auth.v1.TokenService",
          "grpc.health.v1.Health",
          "grpc.reflection.v1.ServerReflection",
          "grpc.reflection.v1alpha.ServerReflection",
          "registry.v1.RegistryService",
        ].sort(),
      );
    });

    it("returns a service's file with every transitive import, self-contained", async () => {
      const [answer] = await converse(server.transport, [{ case: "fileContainingSymbol", value: "registry.v1.RegistryService" }]);
      const files = decodeFiles(answer!);
      const names = files.map((f) => f.name);
      expect(names[0]).toBe("registry/v1/registry_service.proto");
      expect(names).toEqual(
        expect.arrayContaining([
          "registry/v1/registry_service.proto",
          "registry/v1/entry.proto",
          "google/api/annotations.proto",
          "google/api/http.proto",
          "google/protobuf/descriptor.proto",
          "google/protobuf/struct.proto",
        ]),
      );
      expect(new Set(names).size).toBe(names.length);
      // A client must be able to link the set without any other source of descriptors.
      const linked = createFileRegistry(create(FileDescriptorSetSchema, { file: dependencyOrder(files) }));
      expect(linked.getService("registry.v1.RegistryService")?.methods.map((m) => m.name)).toContain("ResolveEntry");
    });

    it("answers each request on one stream as it arrives, symbols with or without a leading dot", async () => {
      const answers = await converse(server.transport, [
        { case: "fileContainingSymbol", value: ".registry.v1.Entry" },
        { case: "fileContainingSymbol", value: "registry.v1.RegistryService.ResolveEntry" },
        { case: "fileContainingSymbol", value: "grpc.health.v1.HealthCheckResponse.ServingStatus" },
        { case: "fileByFilename", value: "auth/v1/token_service.proto" },
        { case: "fileContainingSymbol", value: "grpc.reflection.v1.ServerReflection" },
      ]);
      expect(answers.map((a) => decodeFiles(a)[0]?.name)).toEqual([
        "registry/v1/entry.proto",
        "registry/v1/registry_service.proto",
        "grpc/health/v1/health.proto",
        "auth/v1/token_service.proto",
        "grpc/reflection/v1/reflection.proto",
      ]);
    });

    it("answers extension lookups", async () => {
      const [byNumber, numbers] = await converse(server.transport, [
        {
          case: "fileContainingExtension",
          value: { containingType: "google.protobuf.MethodOptions", extensionNumber: 72295728 },
        } as ServerReflectionRequest["messageRequest"],
        { case: "allExtensionNumbersOfType", value: "google.protobuf.MethodOptions" },
      ]);
      expect(decodeFiles(byNumber!)[0]?.name).toBe("google/api/annotations.proto");
      expect(numbers?.messageResponse).toMatchObject({
        case: "allExtensionNumbersResponse",
        value: {
          baseTypeName: "google.protobuf.MethodOptions",
          extensionNumber: expect.arrayContaining([72295728]),
        },
      });
    });

    it("reports unknown symbols, files and extensions as NOT_FOUND in the stream, which stays usable", async () => {
      const answers = await converse(server.transport, [
        { case: "fileContainingSymbol", value: "no.such.Symbol" },
        { case: "fileByFilename", value: "no/such.proto" },
        {
          case: "fileContainingExtension",
          value: { containingType: "google.protobuf.MethodOptions", extensionNumber: 1 },
        } as ServerReflectionRequest["messageRequest"],
        { case: "allExtensionNumbersOfType", value: "no.such.Type" },
        { case: "listServices", value: "" },
      ]);
      for (const answer of answers.slice(0, 4)) {
        expect(answer.messageResponse).toMatchObject({
          case: "errorResponse",
          value: { errorCode: 5 },
        });
      }
      expect(answers[4]?.messageResponse.case).toBe("listServicesResponse");
      expect(answers[0]?.originalRequest?.messageRequest).toEqual({
        case: "fileContainingSymbol",
        value: "no.such.Symbol",
      });
    });
  });

  describe("reflection v1alpha", () => {
    it("lists services and serves descriptors like v1", async () => {
      const client = createClient(ServerReflectionV1alpha, server.transport);
      async function* requests() {
        yield create(ServerReflectionRequestV1alphaSchema, {
          messageRequest: { case: "listServices", value: "" },
        });
        yield create(ServerReflectionRequestV1alphaSchema, {
          messageRequest: { case: "fileContainingSymbol", value: "auth.v1.TokenService" },
        });
        yield create(ServerReflectionRequestV1alphaSchema, {
          messageRequest: { case: "fileContainingSymbol", value: "nope.Nope" },
        });
      }
      const answers = [];
      for await (const answer of client.serverReflectionInfo(requests())) answers.push(answer);
      expect(answers).toHaveLength(3);
      expect(answers[0]?.$typeName).toBe("grpc.reflection.v1alpha.ServerReflectionResponse");
      const list = answers[0]?.messageResponse;
      expect(list?.case === "listServicesResponse" && list.value.service.map((s) => s.name)).toContain("registry.v1.RegistryService");
      const files = answers[1]?.messageResponse;
      expect(files?.case).toBe("fileDescriptorResponse");
      if (files?.case === "fileDescriptorResponse") {
        const names = files.value.fileDescriptorProto.map((b) => fromBinary(FileDescriptorProtoSchema, b).name);
        expect(names).toEqual(expect.arrayContaining(["auth/v1/token_service.proto", "google/api/annotations.proto"]));
      }
      expect(answers[2]?.messageResponse).toMatchObject({
        case: "errorResponse",
        value: { errorCode: 5 },
      });
    });
  });

  describe("buf curl, driven only by reflection", () => {
    it("lists methods with --list-methods (v1 and v1alpha reflection)", async () => {
      for (const protocol of ["grpc-v1", "grpc-v1alpha"]) {
        const { stdout } = await bufCurl("--reflect-protocol", protocol, "--list-methods", server.baseUrl);
        const methods = stdout.split("\n").map((l) => l.trim());
        expect(methods).toContain("registry.v1.RegistryService/ResolveEntry");
        expect(methods).toContain("auth.v1.TokenService/IssueToken");
        expect(methods).toContain("grpc.health.v1.Health/Check");
      }
    });

    it("calls Health/Check", async () => {
      const { stdout } = await bufCurl("-d", '{"service":""}', `${server.baseUrl}/grpc.health.v1.Health/Check`);
      expect(JSON.parse(stdout)).toEqual({ status: "SERVING" });
    });

    it("encodes a registry request from reflected descriptors", async () => {
      // The empty implementation answers UNIMPLEMENTED; getting that far proves buf curl built the
      // request from the descriptors we served.
      const call = bufCurl("-d", '{"did":"did:example:1"}', `${server.baseUrl}/registry.v1.RegistryService/ResolveEntry`);
      await expect(call).rejects.toMatchObject({ stderr: expect.stringMatching(/unimplemented/i) });
    });
  });

  describe("health", () => {
    const health = () => createClient(Health, server.transport);

    it("reports SERVING for the server and each served service", async () => {
      healthy = true;
      for (const service of ["", "registry.v1.RegistryService", "auth.v1.TokenService"]) {
        const response = await health().check({ service });
        expect(response.status).toBe(ServingStatus.SERVING);
      }
    });

    it("reports NOT_SERVING when the check returns false or throws", async () => {
      try {
        healthy = false;
        expect((await health().check({ service: "" })).status).toBe(ServingStatus.NOT_SERVING);
        healthy = true;
        failing = true;
        expect((await health().check({ service: "registry.v1.RegistryService" })).status).toBe(ServingStatus.NOT_SERVING);
      } finally {
        healthy = true;
        failing = false;
      }
    });

    it("rejects an unknown service with NOT_FOUND", async () => {
      const error = await health()
        .check({ service: "no.such.Service" })
        .then(
          () => undefined,
          (e: unknown) => ConnectError.from(e),
        );
      expect(error?.code).toBe(Code.NotFound);
    });

    it("watches: current status first, then only changes, until cancelled", async () => {
      const abort = new AbortController();
      const seen: ServingStatus[] = [];
      try {
        healthy = true;
        const stream = health().watch({ service: "" }, { signal: abort.signal });
        for await (const response of stream) {
          seen.push(response.status);
          if (seen.length === 1) healthy = false;
          else if (seen.length === 2) healthy = true;
          else break;
        }
      } finally {
        abort.abort();
        healthy = true;
      }
      expect(seen).toEqual([ServingStatus.SERVING, ServingStatus.NOT_SERVING, ServingStatus.SERVING]);
    });

    it("watches an unknown service as SERVICE_UNKNOWN without ending the stream", async () => {
      const abort = new AbortController();
      const stream = health().watch({ service: "no.such.Service" }, { signal: abort.signal });
      const iterator = stream[Symbol.asyncIterator]();
      const first = await iterator.next();
      expect(first.value?.status).toBe(ServingStatus.SERVICE_UNKNOWN);
      const pending = iterator.next();
      const outcome = await Promise.race([pending.then(() => "ended"), new Promise((resolve) => setTimeout(resolve, 100, "open"))]);
      expect(outcome).toBe("open");
      abort.abort();
      await pending.catch(() => undefined);
    });
  });
});
