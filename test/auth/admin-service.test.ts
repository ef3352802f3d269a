import { stat } from "node:fs/promises";
import * as grpc from "@grpc/grpc-js";
import { fromJson, toJson, type JsonValue } from "@bufbuild/protobuf";
import { createClient } from "@connectrpc/connect";
import { createConnectTransport, createGrpcWebTransport } from "@connectrpc/connect-node";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { AdminService } from "../../gen/auth/v1/admin_service_pb.js";
import { adminCredentialPath, readAdminCredential } from "../../src/storage/admin-credential-file.js";
import { temporaryDirectory } from "../support/child-processes.js";
import { grpcJsClientConstructor } from "../support/grpc-js-client.js";
import { failure, PROTOCOLS, type CallResult, type Protocol } from "../support/protocol-clients.js";
import { createPublisher, startTestRegistry, type TestRegistry } from "../support/registry-fixture.js";
import { createTestDatabase, type TestDatabase } from "../support/test-database.js";

/**
 * auth.v1.AdminService on a running server, on every protocol: the credential it writes to its
 * data directory is the only way in, and what it does is what `registry root-token` does.
 */

let db: TestDatabase;
let dataDir: { path: string; remove(): Promise<void> };
let registry: TestRegistry;
let credential: string;

beforeAll(async () => {
  db = await createTestDatabase();
  dataDir = await temporaryDirectory("registry-admin-api-");
  registry = await startTestRegistry(db.database, { adminApi: true, dataDir: dataDir.path });
  credential = (await readAdminCredential(dataDir.path)) as string;
});
afterAll(async () => {
  await registry?.close();
  await db?.drop();
  await dataDir?.remove();
});

type AdminMethod = "CreateRootToken" | "ListRootTokens" | "RevokeRootToken";

/** One AdminService call over `protocol`, with `authorization` sent as is (or not at all). */
async function callAdmin(
  protocol: Protocol,
  url: string,
  method: AdminMethod,
  request: Record<string, unknown>,
  authorization?: string,
): Promise<CallResult> {
  const desc = AdminService.methods.find((candidate) => candidate.name === method)!;
  const headers: Record<string, string> = authorization === undefined ? {} : { authorization };
  if (protocol === "rest") {
    const rest = {
      CreateRootToken: { verb: "POST", path: "/v1/admin/root-tokens", body: JSON.stringify(request) },
      ListRootTokens: { verb: "GET", path: "/v1/admin/root-tokens", body: undefined },
      RevokeRootToken: { verb: "DELETE", path: `/v1/admin/root-tokens/${encodeURIComponent(String(request.id))}`, body: undefined },
    }[method];
    const response = await fetch(url + rest.path, {
      method: rest.verb,
      headers: rest.body === undefined ? headers : { ...headers, "content-type": "application/json" },
      body: rest.body,
    });
    const json: any = await response.json();
    expect(response.headers.get("cache-control"), method).toBe("no-store");
    if (response.ok) return { code: "ok", body: json, message: "", fields: [], httpStatus: response.status };
    const fields = (json.details ?? []).flatMap((detail: any) => (detail.fieldViolations ?? []).map((v: any) => v.field));
    return { code: json.code, body: json, message: json.message, fields, httpStatus: response.status };
  }
  const message = fromJson(desc.input, request as JsonValue);
  try {
    if (protocol === "grpc") {
      const Client = grpcJsClientConstructor(AdminService);
      const client = new Client(new URL(url).host, grpc.credentials.createInsecure()) as any;
      const metadata = new grpc.Metadata();
      if (authorization !== undefined) metadata.set("authorization", authorization);
      try {
        const response = await new Promise<any>((resolve, reject) =>
          client[method](message, metadata, (error: grpc.ServiceError | null, answer: any) =>
            error === null ? resolve(answer) : reject(error),
          ),
        );
        return { code: "ok", body: toJson(desc.output, response, { alwaysEmitImplicit: true }), message: "", fields: [] };
      } finally {
        client.close();
      }
    }
    const transport =
      protocol === "connect"
        ? createConnectTransport({ baseUrl: url, httpVersion: "1.1" })
        : createGrpcWebTransport({ baseUrl: url, httpVersion: "1.1" });
    const client = createClient(AdminService, transport) as unknown as Record<string, (request: unknown, options: unknown) => Promise<any>>;
    const response = await client[desc.localName]!(message, { headers });
    return { code: "ok", body: toJson(desc.output, response, { alwaysEmitImplicit: true }), message: "", fields: [] };
  } catch (error) {
    return failure(error);
  }
}

async function exchange(rootToken: string): Promise<number> {
  const response = await fetch(`${registry.url}/v1/tokens`, {
    method: "POST",
    headers: { authorization: `Bearer ${rootToken}`, "content-type": "application/json" },
    body: JSON.stringify({ scopes: ["registry.publish.skill"] }),
  });
  return response.status;
}

describe("the admin credential", () => {
  it("is written to the data directory for the operator alone", async () => {
    expect(credential).toMatch(/^[A-Za-z0-9_-]{43}$/);
    const file = await stat(adminCredentialPath(dataDir.path));
    expect(file.mode & 0o777).toBe(0o600);
  });

  it("is required, and must be this server's, on every protocol and every method", async () => {
    const publisher = await createPublisher();
    const requests: Record<AdminMethod, Record<string, unknown>> = {
      CreateRootToken: { subject: publisher.did, scopes: ["registry.publish.skill"] },
      ListRootTokens: {},
      RevokeRootToken: { id: "rt_0123456789abcdef" },
    };
    const other = Buffer.alloc(32, 7).toString("base64url");
    const refused = [undefined, `Bearer ${other}`, `Bearer ${credential}x`, `Basic ${credential}`, credential, "Bearer "];
    for (const protocol of PROTOCOLS) {
      for (const [method, request] of Object.entries(requests) as [AdminMethod, Record<string, unknown>][]) {
        for (const authorization of refused) {
          const result = await callAdmin(protocol, registry.url, method, request, authorization);
          expect(result.code, `${protocol} ${method} ${authorization}`).toBe("unauthenticated");
          if (protocol === "rest") expect(result.httpStatus).toBe(401);
          expect(result.message).not.toContain(credential);
        }
      }
    }
    const listed = await callAdmin("connect", registry.url, "ListRootTokens", {}, `Bearer ${credential}`);
    expect(listed.body.rootTokens.filter((token: any) => token.subject === publisher.did)).toEqual([]);
  });
});

describe("root tokens through the admin API", () => {
  it("creates a root token that works at POST /v1/tokens, lists it and revokes it, on every protocol", async () => {
    for (const protocol of PROTOCOLS) {
      const publisher = await createPublisher();
      const bearer = `Bearer ${credential}`;
      const created = await callAdmin(
        protocol,
        registry.url,
        "CreateRootToken",
        { subject: publisher.did, scopes: ["registry.publish.skill"], description: protocol },
        bearer,
      );
      expect(created.code, protocol).toBe("ok");
      if (protocol === "rest") expect(created.httpStatus).toBe(200);
      const { token, rootToken } = created.body;
      expect(token).toMatch(/^regrt_[A-Za-z0-9_-]{43}$/);
      expect(rootToken).toMatchObject({ subject: publisher.did, scopes: ["registry.publish.skill"], description: protocol });
      expect(rootToken.id).toMatch(/^rt_[0-9a-f]{16}$/);
      expect(rootToken.revokedAt).toBeUndefined();
      expect(await exchange(token)).toBe(200);

      const listed = await callAdmin(protocol, registry.url, "ListRootTokens", {}, bearer);
      expect(listed.body.rootTokens).toContainEqual(rootToken);

      const revoked = await callAdmin(protocol, registry.url, "RevokeRootToken", { id: rootToken.id }, bearer);
      expect(revoked.code, protocol).toBe("ok");
      expect(Date.parse(revoked.body.rootToken.revokedAt)).not.toBeNaN();
      expect(await exchange(token)).toBe(401);
    }
  });

  it("names the fields a request breaks, and an unknown id is not found", async () => {
    const bearer = `Bearer ${credential}`;
    for (const protocol of PROTOCOLS) {
      const bad = await callAdmin(
        protocol,
        registry.url,
        "CreateRootToken",
        { subject: "did:web:example.com", scopes: ["registry.publish.nope"], description: "x".repeat(501) },
        bearer,
      );
      expect(bad.code, protocol).toBe("invalid_argument");
      expect([...bad.fields].sort()).toEqual(["description", "scopes[0]", "subject"]);
      const none = await callAdmin(
        protocol,
        registry.url,
        "CreateRootToken",
        { subject: (await createPublisher()).did, scopes: [] },
        bearer,
      );
      expect(none.fields).toEqual(["scopes"]);
      const missing = await callAdmin(protocol, registry.url, "RevokeRootToken", { id: "rt_0000000000000000" }, bearer);
      expect(missing.code, protocol).toBe("not_found");
      if (protocol === "rest") expect(missing.httpStatus).toBe(404);
    }
  });
});

describe("where the admin API is served", () => {
  it("removes the credential file when the server stops", async () => {
    const dir = await temporaryDirectory("registry-admin-stop-");
    try {
      const server = await startTestRegistry(db.database, { adminApi: true, dataDir: dir.path });
      expect(await readAdminCredential(dir.path)).toMatch(/^[A-Za-z0-9_-]{43}$/);
      await server.close();
      expect(await readAdminCredential(dir.path)).toBeUndefined();
    } finally {
      await dir.remove();
    }
  });

  it("is not served with ADMIN_API=false, nor by default on a database the server did not open itself", async () => {
    const dir = await temporaryDirectory("registry-admin-off-");
    try {
      for (const overrides of [{ adminApi: false as const }, {}]) {
        const server = await startTestRegistry(db.database, { ...overrides, dataDir: dir.path });
        try {
          expect(await readAdminCredential(dir.path)).toBeUndefined();
          const rest = await callAdmin("rest", server.url, "ListRootTokens", {}, `Bearer ${credential}`);
          expect(rest.httpStatus).toBe(404);
          const connect = await callAdmin("connect", server.url, "ListRootTokens", {}, `Bearer ${credential}`);
          expect(connect.code).toBe("unimplemented");
        } finally {
          await server.close();
        }
      }
    } finally {
      await dir.remove();
    }
  });

  it("is served by the auth role, and not by the registry role", async () => {
    for (const role of ["auth", "registry"] as const) {
      const dir = await temporaryDirectory("registry-admin-role-");
      try {
        const server = await startTestRegistry(db.database, { role, adminApi: true, dataDir: dir.path, authUrl: registry.url });
        try {
          const own = await readAdminCredential(dir.path);
          const listed = await callAdmin("rest", server.url, "ListRootTokens", {}, `Bearer ${own}`);
          expect(listed.httpStatus, role).toBe(role === "auth" ? 200 : 404);
        } finally {
          await server.close();
        }
      } finally {
        await dir.remove();
      }
    }
  });
});
