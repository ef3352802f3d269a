import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startRegistryOnFreshDatabase, type FreshRegistry } from "../support/registry-fixture.js";

/**
 * Clickjacking: no other site may frame a page of the registry. Every HTML answer says so twice,
 * in its Content-Security-Policy (frame-ancestors 'none') and in X-Frame-Options for older
 * browsers; revalidations (304) too, since a browser may apply a cached page's headers from them.
 */

let fresh: FreshRegistry;
let url: string;

beforeAll(async () => {
  fresh = await startRegistryOnFreshDatabase();
  url = fresh.registry.url;
});

afterAll(async () => {
  await fresh?.close();
});

function expectUnframeable(response: Response, label: string): void {
  expect(response.headers.get("x-frame-options"), label).toBe("DENY");
  const policy = response.headers.get("content-security-policy") ?? "";
  expect(
    policy.split(";").map((directive) => directive.trim()),
    label,
  ).toContain("frame-ancestors 'none'");
}

describe("HTML answers", () => {
  it("/docs, with or without its slash, on GET and HEAD, and its 304", async () => {
    for (const path of ["/docs", "/docs/"]) {
      const page = await fetch(url + path);
      expect(page.status).toBe(200);
      expect(page.headers.get("content-type")).toMatch(/^text\/html/);
      expectUnframeable(page, `GET ${path}`);
      expectUnframeable(await fetch(url + path, { method: "HEAD" }), `HEAD ${path}`);
      const revalidated = await fetch(url + path, { headers: { "if-none-match": page.headers.get("etag")! } });
      expect(revalidated.status).toBe(304);
      expectUnframeable(revalidated, `304 ${path}`);
    }
  });

  it("any answer served as HTML, wherever it comes from", async () => {
    const paths = [
      "/",
      "/docs",
      "/docs/",
      "/docs/index.html",
      "/openapi.json",
      "/healthz",
      "/readyz",
      "/checkpoint",
      "/v1/entries/x",
      "/nothing-here",
      "/registry.v1.RegistryService/ResolveEntry",
    ];
    let html = 0;
    for (const path of paths) {
      const response = await fetch(url + path, { headers: { accept: "text/html" } });
      if (!(response.headers.get("content-type") ?? "").startsWith("text/html")) continue;
      html += 1;
      expectUnframeable(response, path);
    }
    expect(html).toBeGreaterThanOrEqual(2);
  });
});
