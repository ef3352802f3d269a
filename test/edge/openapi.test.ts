import { readFile } from "node:fs/promises";
import { join } from "node:path";
import { ScalarType, type DescMessage } from "@bufbuild/protobuf";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { roleAllRoutes } from "../../src/edge/openapi/committed-openapi-document.js";
import { openApiPath } from "../../src/edge/openapi/openapi-document.js";
import type { RestRoute } from "../../src/edge/rest-transcoder.js";
import { createTestDatabase, type TestDatabase } from "../support/test-database.js";
import { temporaryDirectory } from "../support/child-processes.js";
import { createPublisher, startTestRegistry, type TestPublisher, type TestRegistry } from "../support/registry-fixture.js";
import { signLifecycle } from "../../src/sdk/signing.js";

/** The OpenAPI document against the route table it is built from, and against a running server. */

let db: TestDatabase;
let dataDir: { path: string; remove(): Promise<void> };
let registry: TestRegistry;
let publisher: TestPublisher;
let token: string;
let committed: string;
let document: any;
const routes: RestRoute[] = roleAllRoutes();

const NAME = "openapi-entry";
const DID = `did:reg:main:skill:${NAME}@1.0.0`;
const ORIGIN = "https://app.example";

beforeAll(async () => {
  db = await createTestDatabase();
  // Limits on (and too high to be reached), so answers carry the RateLimit headers they document.
  const limits = {
    rateLimitRps: 1000,
    rateLimitBurst: 1000,
    writeRateLimitRps: 1000,
    writeRateLimitBurst: 1000,
    tokenRateLimitRps: 1000,
    tokenRateLimitBurst: 1000,
  };
  // The admin API on, as on an embedded database by default: the committed document describes it.
  dataDir = await temporaryDirectory("registry-openapi-");
  registry = await startTestRegistry(db.database, { ...limits, corsOrigins: [ORIGIN], adminApi: true, dataDir: dataDir.path });
  publisher = await createPublisher();
  token = await registry.accessToken(publisher.did, ["registry.publish.skill"]);
  const created = await fetch(`${registry.url}/v1/entries`, {
    method: "POST",
    headers: { "content-type": "application/json", authorization: `Bearer ${token}` },
    body: JSON.stringify(await publisher.entry(NAME, "1.0.0")),
  });
  expect(created.status).toBe(201);
  committed = await readFile(new URL("../../docs/openapi.json", import.meta.url), "utf8");
  // What this server's code documents; the committed file is compared with it below.
  document = await (await fetch(`${registry.url}/openapi.json`)).json();
});
afterAll(async () => {
  await registry?.close();
  await db?.drop();
  await dataDir?.remove();
});

function operations(doc: any): { key: string; operation: any }[] {
  return Object.entries(doc.paths as Record<string, Record<string, any>>).flatMap(([path, methods]) =>
    Object.entries(methods).map(([method, operation]) => ({ key: `${method.toUpperCase()} ${path}`, operation })),
  );
}

function operationOf(route: RestRoute): any {
  return document.paths[openApiPath(route.template)]?.[route.httpMethod.toLowerCase()];
}

/** Follows a local "#/..." reference. */
function resolveRef(ref: string): unknown {
  expect(ref.startsWith("#/")).toBe(true);
  return ref
    .slice(2)
    .split("/")
    .map((part) => part.replace(/~1/g, "/").replace(/~0/g, "~"))
    .reduce<any>((node, part) => (node === undefined ? undefined : node[part]), document);
}

function refsIn(node: unknown, found: string[] = []): string[] {
  if (Array.isArray(node)) for (const item of node) refsIn(item, found);
  else if (typeof node === "object" && node !== null) {
    for (const [key, value] of Object.entries(node)) {
      if (key === "$ref" && typeof value === "string") found.push(value);
      else refsIn(value, found);
    }
  }
  return found;
}

/** A concrete path for a route: each variable filled with the created entry's DID. */
function concretePath(route: RestRoute): string {
  return openApiPath(route.template).replace(/\{[^}]+\}/g, encodeURIComponent(DID));
}

/** Calls a route with no credentials and an empty JSON object where it takes a body. */
function callBare(route: RestRoute): Promise<Response> {
  const hasBody = route.body !== "";
  return fetch(registry.url + concretePath(route), {
    method: route.httpMethod,
    headers: hasBody ? { "content-type": "application/json" } : {},
    body: hasBody ? "{}" : undefined,
  });
}

function messagesReachable(roots: readonly DescMessage[]): DescMessage[] {
  const seen = new Map<string, DescMessage>();
  const visit = (message: DescMessage) => {
    if (seen.has(message.typeName) || message.typeName.startsWith("google.protobuf.")) return;
    seen.set(message.typeName, message);
    for (const field of message.fields) if (field.message !== undefined) visit(field.message);
  };
  for (const root of roots) visit(root);
  return [...seen.values()];
}

describe("the document and the route table", () => {
  it("has one operation per route, and none more", () => {
    expect(routes.length).toBeGreaterThan(0);
    const fromRoutes = routes.map((route) => `${route.httpMethod} ${openApiPath(route.template)}`).sort();
    expect(
      operations(document)
        .map(({ key }) => key)
        .sort(),
    ).toEqual(fromRoutes);
  });

  it("names the create route's 201, and every route's own success status alone", () => {
    for (const route of routes) {
      const statuses = Object.keys(operationOf(route).responses).filter((status) => status.startsWith("2"));
      expect(statuses).toEqual([String(route.successStatus)]);
    }
    expect(document.paths["/v1/entries"].post.responses["201"]).toBeDefined();
  });

  it("resolves every reference, and every operation has a success schema", () => {
    const refs = refsIn(document);
    expect(refs.length).toBeGreaterThan(0);
    for (const ref of refs) expect(resolveRef(ref), ref).toBeDefined();
    for (const { key, operation } of operations(document)) {
      const success = Object.entries(operation.responses).find(([status]) => status.startsWith("2"))?.[1] as any;
      expect(success?.content?.["application/json"]?.schema, key).toBeDefined();
    }
  });

  it("writes 64-bit integers as strings, under their JSON names", () => {
    const messages = messagesReachable(routes.flatMap((route) => [route.target.method.input, route.target.method.output]));
    let checked = 0;
    for (const message of messages) {
      const schema = document.components.schemas[message.typeName];
      if (schema === undefined) continue; // a request message the route spreads over path and body
      for (const field of message.fields) {
        expect(schema.properties[field.jsonName], `${message.typeName}.${field.jsonName}`).toBeDefined();
        if (field.fieldKind === "scalar" && [ScalarType.INT64, ScalarType.UINT64, ScalarType.SINT64].includes(field.scalar)) {
          expect(schema.properties[field.jsonName].type).toBe("string");
          checked++;
        }
      }
    }
    expect(checked).toBeGreaterThan(0);
    expect(document.components.schemas["registry.v1.Entry"].properties.sequence.type).toBe("string");
    expect(document.components.schemas["registry.v1.Entry"].properties.data).toEqual({
      type: "object",
      additionalProperties: true,
      description: "Any JSON object.",
    });
  });
});

describe("the document against the running server", () => {
  it("is served at /openapi.json, byte for byte the committed file", async () => {
    const response = await fetch(`${registry.url}/openapi.json`);
    expect(response.status).toBe(200);
    expect(response.headers.get("content-type")).toBe("application/json");
    expect(await response.text()).toBe(committed);
    const tag = response.headers.get("etag");
    expect(tag).toMatch(/^"[^"]+"$/);
    const again = await fetch(`${registry.url}/openapi.json`, { headers: { "if-none-match": tag as string } });
    expect(again.status).toBe(304);
    const crossOrigin = await fetch(`${registry.url}/openapi.json`, { headers: { origin: ORIGIN } });
    expect(crossOrigin.headers.get("access-control-allow-origin")).toBe(ORIGIN);
  });

  it("documents a route for every operation the server answers, and none the server lacks", async () => {
    for (const route of routes) {
      const response = await callBare(route);
      const body = (await response.json()) as { message?: string };
      expect(response.status, route.name).not.toBe(405);
      expect(body.message ?? "", route.name).not.toMatch(/^no route for/);
    }
  });

  it("puts bearer security on exactly the routes that answer 401 without a credential", async () => {
    for (const route of routes) {
      const response = await callBare(route);
      const security = operationOf(route).security;
      if (response.status === 401) {
        expect(security.length, route.name).toBe(1);
        expect(Object.keys(document.components.securitySchemes)).toContain(Object.keys(security[0])[0]);
        expect(operationOf(route).responses["401"], route.name).toBeDefined();
      } else {
        expect(security, route.name).toEqual([]);
      }
    }
    expect(document.paths["/v1/entries"].post.security).toEqual([{ accessToken: [] }]);
    expect(document.paths["/v1/admin/root-tokens"].post.security).toEqual([{ adminCredential: [] }]);
  });

  it("documents the RateLimit headers on exactly the routes whose answers carry them", async () => {
    for (const route of routes) {
      const response = await callBare(route);
      const operation = operationOf(route);
      const success = operation.responses[String(route.successStatus)];
      const documented = success.headers.RateLimit !== undefined;
      expect(response.headers.get("ratelimit") !== null, route.name).toBe(documented);
      expect(response.headers.get("ratelimit-policy") !== null, route.name).toBe(documented);
      expect(operation.responses["429"] !== undefined, route.name).toBe(documented);
    }
    const tooMany = resolveRef(document.paths["/v1/entries/{did}"].get.responses["429"].$ref) as any;
    expect(Object.keys(tooMany.headers)).toEqual(expect.arrayContaining(["Retry-After", "RateLimit", "RateLimit-Policy"]));
  });

  it("describes a real answer: a resolve's JSON is an Entry, and an error is the Error body", async () => {
    const response = await fetch(`${registry.url}/v1/entries/${encodeURIComponent(DID)}`);
    expect(response.status).toBe(200);
    const entry = (await response.json()) as Record<string, unknown>;
    const schemaRef = document.paths["/v1/entries/{did}"].get.responses["200"].content["application/json"].schema.$ref;
    const schema = resolveRef(schemaRef) as any;
    expect(Object.keys(schema.properties)).toEqual(expect.arrayContaining(Object.keys(entry)));
    for (const [key, value] of Object.entries(entry)) {
      const type = schema.properties[key].type;
      expect(type === "array" ? Array.isArray(value) : typeof value, key).toBe(type === "array" ? true : type);
    }

    const missing = await fetch(`${registry.url}/v1/entries/${encodeURIComponent("did:reg:main:skill:absent@1.0.0")}`);
    expect(missing.status).toBe(404);
    const error = (await missing.json()) as Record<string, unknown>;
    const errorSchema = document.components.schemas.Error;
    expect(Object.keys(error).sort()).toEqual([...errorSchema.required].sort());
    expect(errorSchema.properties.code.enum).toContain(error.code);
  });

  it("documents only the routes a role-split server serves", async () => {
    const auth = await startTestRegistry(db.database, { role: "auth" });
    try {
      const served = (await (await fetch(`${auth.url}/openapi.json`)).json()) as any;
      expect(Object.keys(served.paths).sort()).toEqual(["/.well-known/jwks.json", "/v1/tokens"]);
      expect(Object.keys(served.components.schemas).some((name) => name.startsWith("registry.v1."))).toBe(false);
    } finally {
      await auth.close();
    }
  });
});

/**
 * What is wrong with `value` under `schema`, in the document's subset of JSON Schema. A member the
 * schema does not list is wrong too, unless `open` (a part of an allOf, whose whole lists it).
 */
function schemaProblems(value: unknown, schema: any, path = "$", open = false): string[] {
  if (schema.$ref !== undefined) return schemaProblems(value, resolveRef(schema.$ref), path, open);
  if (schema.allOf !== undefined) {
    const parts = schema.allOf.map((part: any) => (part.$ref === undefined ? part : resolveRef(part.$ref)));
    const listed = new Set(parts.flatMap((part: any) => Object.keys(part.properties ?? {})));
    const unlisted = hasJsonType(value, "object") ? Object.keys(value as object).filter((name) => !listed.has(name)) : [];
    return [
      ...parts.flatMap((part: any) => schemaProblems(value, part, path, true)),
      ...unlisted.map((name) => `${path}.${name}: is not in the schema`),
    ];
  }
  if (schema.anyOf !== undefined) {
    const fits = schema.anyOf.some((part: any) => schemaProblems(value, part, path).length === 0);
    return fits ? [] : [`${path}: fits none of its anyOf schemas`];
  }
  const types: string[] = schema.type === undefined ? [] : [schema.type].flat();
  if (types.length > 0 && !types.some((type) => hasJsonType(value, type)))
    return [`${path}: ${JSON.stringify(value)} is not ${types.join(" or ")}`];
  const problems: string[] = [];
  if (schema.const !== undefined && value !== schema.const) problems.push(`${path}: is not ${JSON.stringify(schema.const)}`);
  if (schema.enum !== undefined && !schema.enum.includes(value)) problems.push(`${path}: ${JSON.stringify(value)} is not one of its enum`);
  if (typeof value === "string" && schema.pattern !== undefined && !new RegExp(schema.pattern, "u").test(value)) {
    problems.push(`${path}: ${JSON.stringify(value)} does not match ${schema.pattern}`);
  }
  if (Array.isArray(value) && schema.items !== undefined) {
    for (const [index, item] of value.entries()) problems.push(...schemaProblems(item, schema.items, `${path}[${index}]`));
  }
  if (hasJsonType(value, "object")) {
    const object = value as Record<string, unknown>;
    for (const name of schema.required ?? []) if (!(name in object)) problems.push(`${path}.${name}: is required, and missing`);
    for (const [name, member] of Object.entries(object)) {
      const memberSchema = schema.properties?.[name] ?? schema.additionalProperties;
      if (memberSchema === undefined && schema.properties !== undefined && !open) problems.push(`${path}.${name}: is not in the schema`);
      else if (typeof memberSchema === "object") problems.push(...schemaProblems(member, memberSchema, `${path}.${name}`));
    }
  }
  return problems;
}

function hasJsonType(value: unknown, type: string): boolean {
  if (type === "integer") return Number.isInteger(value);
  if (type === "array") return Array.isArray(value);
  if (type === "null") return value === null;
  if (type === "object") return typeof value === "object" && value !== null && !Array.isArray(value);
  return typeof value === type;
}

describe("answers against the document", () => {
  /**
   * Calls a route and checks the answer: its status (the operation's success unless `status`
   * says otherwise) is documented, and its body fits the status's schema.
   */
  async function checkedCall(
    method: string,
    template: string,
    path: string,
    init: { body?: unknown; authorization?: string; status?: number } = {},
  ) {
    const headers: Record<string, string> = {};
    if (init.body !== undefined) headers["content-type"] = "application/json";
    if (init.authorization !== undefined) headers.authorization = `Bearer ${init.authorization}`;
    const response = await fetch(registry.url + path, {
      method,
      headers,
      body: init.body === undefined ? undefined : JSON.stringify(init.body),
    });
    const body = (await response.json()) as any;
    const name = `${method} ${path} (${response.status})`;
    const responses = document.paths[template][method.toLowerCase()].responses;
    expect(response.status, name).toBe(init.status ?? Number(Object.keys(responses).find((status) => status.startsWith("2"))));
    let documented = responses[String(response.status)];
    expect(documented, name).toBeDefined();
    if (documented.$ref !== undefined) documented = resolveRef(documented.$ref);
    expect(schemaProblems(body, documented.content["application/json"].schema), name).toEqual([]);
    return { status: response.status, headers: response.headers, body };
  }

  it("each required member is in every answer, each enum holds every value, and nothing undocumented appears", async () => {
    const name = "openapi-answers";
    const bare = `did:reg:main:skill:${name}`;
    const v1 = `${bare}@1.0.0`;
    const enc = encodeURIComponent;
    await checkedCall("POST", "/v1/entries", "/v1/entries", {
      body: await publisher.entry(name, "1.0.0", { data: { license: "MIT", nested: { depth: [1, 2] } } }),
      authorization: token,
    });
    await checkedCall("POST", "/v1/entries", "/v1/entries", {
      body: await publisher.entry(name, "1.1.0", { description: "", tags: [], data: {}, bondAmount: "" }),
      authorization: token,
    });
    await checkedCall("GET", "/v1/entries/{did}", `/v1/entries/${enc(bare)}`);
    await checkedCall("GET", "/v1/entries/{did}", `/v1/entries/${enc(v1)}`);
    await checkedCall("GET", "/v1/entries/{did}/versions", `/v1/entries/${enc(bare)}/versions`);
    const issuedAt = new Date().toISOString();
    const signature = await signLifecycle(
      { subject: v1, action: "deprecate", reason: "old", by: publisher.did, issuedAt },
      publisher.keys.privateKey,
    );
    const deprecated = await checkedCall("POST", "/v1/entries/{did}/lifecycle", `/v1/entries/${enc(v1)}/lifecycle`, {
      body: { action: "deprecate", reason: "old", issuedAt, signature },
      authorization: token,
    });
    expect(deprecated.body.entries[0].status).toBe("deprecated");
    const revoked = await checkedCall("DELETE", "/v1/entries/{did}", `/v1/entries/${enc(v1)}`, {
      body: await publisher.revocation(v1, "withdrawn"),
      authorization: token,
    });
    expect(revoked.body.entries[0].revokedAt).toBeDefined();
    await checkedCall("POST", "/v1/discover", "/v1/discover", {
      body: { conditions: [{ field: "status", op: "IN", value: ["active", "revoked"] }], limit: 1 },
    });
    await checkedCall("POST", "/v1/discover/ql", "/v1/discover/ql", {
      body: { query: "SELECT entry_did, data.nested FROM entries", limit: 1 },
    });
    await checkedCall("POST", "/v1/tokens", "/v1/tokens", {
      body: { scopes: ["registry.publish.skill"] },
      authorization: await registry.rootToken(publisher.did, ["registry.publish.skill"]),
    });
    await checkedCall("GET", "/.well-known/jwks.json", "/.well-known/jwks.json");

    const credential = (await readFile(join(dataDir.path, "admin-credential"), "utf8")).trim();
    const root = await checkedCall("POST", "/v1/admin/root-tokens", "/v1/admin/root-tokens", {
      body: { subject: publisher.did, scopes: ["registry.publish.skill"] },
      authorization: credential,
    });
    const id = root.body.rootToken.id;
    await checkedCall("DELETE", "/v1/admin/root-tokens/{id}", `/v1/admin/root-tokens/${id}`, { authorization: credential });
    await checkedCall("GET", "/v1/admin/root-tokens", "/v1/admin/root-tokens", { authorization: credential });

    await checkedCall("GET", "/v1/changes", "/v1/changes");
    let treeSize = 0;
    for (let tries = 0; treeSize < 4 && tries < 100; tries++) {
      treeSize = Number((await checkedCall("GET", "/v1/log/checkpoint", "/v1/log/checkpoint")).body.treeSize);
      if (treeSize < 4) await new Promise((resolve) => setTimeout(resolve, 100));
    }
    expect(treeSize).toBeGreaterThanOrEqual(4);
    await checkedCall("GET", "/v1/log/key", "/v1/log/key");
    await checkedCall("GET", "/v1/log/proofs/inclusion", `/v1/log/proofs/inclusion?index=1&treeSize=${treeSize}`);
    await checkedCall("GET", "/v1/log/proofs/consistency", `/v1/log/proofs/consistency?fromSize=1&toSize=${treeSize}`);
    await checkedCall("GET", "/v1/log/entries/{did}", `/v1/log/entries/${enc(v1)}`);
    await checkedCall("GET", "/v1/entries/{did}/history", `/v1/entries/${enc(bare)}/history`);

    // Errors fit the error body too.
    await checkedCall("GET", "/v1/entries/{did}", `/v1/entries/${enc(`${bare}@9.9.9`)}`, { status: 404 });
    await checkedCall("POST", "/v1/entries", "/v1/entries", { body: { entry: 1 }, authorization: token, status: 400 });
    await checkedCall("POST", "/v1/entries", "/v1/entries", { body: {}, status: 401 });
  });

  it("documents the 405 a path answers to a method it has no route for, with its Allow header", async () => {
    const path = `/v1/entries/${encodeURIComponent(DID)}/versions`;
    const response = await fetch(registry.url + path, { method: "PUT" });
    expect(response.status).toBe(405);
    expect(response.headers.get("allow")).toBe("GET");
    const documented = resolveRef(document.paths["/v1/entries/{did}/versions"].get.responses["405"].$ref) as any;
    expect(documented.headers.Allow.required).toBe(true);
    expect(schemaProblems(await response.json(), documented.content["application/json"].schema)).toEqual([]);
    for (const { key, operation } of operations(document)) expect(operation.responses["405"], key).toBeDefined();
  });

  it("leaves server-set fields out of requests, and requires what the protos mark REQUIRED", () => {
    const answer = document.components.schemas["registry.v1.Entry"];
    const request = document.components.schemas["registry.v1.EntryInput"];
    const readOnly = Object.keys(answer.properties).filter((name) => answer.properties[name].readOnly === true);
    expect(readOnly).toEqual(expect.arrayContaining(["sequence", "status", "isLatest", "revokedAt"]));
    for (const name of readOnly) expect(request.properties[name], name).toBeUndefined();
    expect(request.required).toEqual(expect.arrayContaining(["entryDid", "signature"]));
    expect(answer.properties.status.enum).toContain("revoked");
    expect(document.paths["/v1/entries"].post.requestBody.content["application/json"].schema.$ref).toBe(
      "#/components/schemas/registry.v1.EntryInput",
    );
  });
});

describe("the reference page at /docs", () => {
  it("loads only this server's files, and each answers with its type", async () => {
    const page = await fetch(`${registry.url}/docs`);
    expect(page.status).toBe(200);
    expect(page.headers.get("content-type")).toBe("text/html; charset=utf-8");
    expect(page.headers.get("content-security-policy")).toContain("default-src 'none'");
    const html = await page.text();
    const urls = [...html.matchAll(/\b(?:src|href)="([^"]+)"/g)].map((match) => match[1] as string);
    expect(urls.length).toBeGreaterThanOrEqual(3);
    expect(html).not.toMatch(/https?:\/\//);
    const expected: Record<string, RegExp> = { ".js": /^text\/javascript/, ".css": /^text\/css/, ".png": /^image\/png$/ };
    for (const url of urls) {
      expect(url, url).toMatch(/^\/[^/]/);
      const response = await fetch(registry.url + url);
      expect(response.status, url).toBe(200);
      const extension = url.slice(url.lastIndexOf("."));
      expect(response.headers.get("content-type"), url).toMatch(expected[extension] as RegExp);
      expect(response.headers.get("etag"), url).not.toBeNull();
      expect((await response.arrayBuffer()).byteLength, url).toBeGreaterThan(0);
    }
    const init = await (await fetch(`${registry.url}/docs/init.js`)).text();
    expect(init).toContain('url: "/openapi.json"');
    expect(init).toContain("validatorUrl: null");
  });

  it("compresses the renderer for clients that accept it, with a coded ETag, and revalidates", async () => {
    const response = await fetch(`${registry.url}/docs/swagger-ui-bundle.js`, { headers: { "accept-encoding": "gzip" } });
    expect(response.status).toBe(200);
    expect(response.headers.get("content-encoding")).toBe("gzip");
    expect(response.headers.get("cache-control")).toBe("public, max-age=86400");
    const tag = response.headers.get("etag") as string;
    expect(tag).toMatch(/-gzip"$/);
    await response.arrayBuffer();
    const again = await fetch(`${registry.url}/docs/swagger-ui-bundle.js`, { headers: { "if-none-match": tag } });
    expect(again.status).toBe(304);
  });
});
