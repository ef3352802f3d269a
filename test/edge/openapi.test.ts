import { readFile } from "node:fs/promises";
import { ScalarType, type DescMessage } from "@bufbuild/protobuf";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { roleAllRoutes } from "../../src/edge/openapi/committed-openapi-document.js";
import { openApiPath } from "../../src/edge/openapi/openapi-document.js";
import type { RestRoute } from "../../src/edge/rest-transcoder.js";
import { createTestDatabase, type TestDatabase } from "../support/test-database.js";
import { temporaryDirectory } from "../support/child-processes.js";
import { createPublisher, startTestRegistry, type TestPublisher, type TestRegistry } from "../support/registry-fixture.js";

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
    expect(document.components.schemas["registry.v1.Entry"].properties.data).toEqual({ type: "object", description: "Any JSON object." });
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
