import { describe, expect, it } from "vitest";
import { explorerAddress } from "../../src/edge/explorer/page-addresses.js";

describe("the explorer's addresses", () => {
  it("names its five pages and its assets", () => {
    expect(explorerAddress("/")).toEqual({ page: "home" });
    expect(explorerAddress("/search")).toEqual({ page: "search" });
    expect(explorerAddress("/log")).toEqual({ page: "log" });
    expect(explorerAddress("/assets/index-B4Y4lbdZ.js")).toEqual({
      page: "asset",
      file: "index-B4Y4lbdZ.js",
      contentType: "text/javascript; charset=utf-8",
    });
    expect(explorerAddress("/publishers/did:key:z6Mk")).toEqual({ page: "publisher", did: "did:key:z6Mk" });
  });

  it("reads an entry DID as typed, with @ literal or escaped", () => {
    const did = "did:reg:main:skill:web-search@1.0.0";
    expect(explorerAddress(`/entries/${did}`)).toEqual({ page: "entry", did });
    expect(explorerAddress("/entries/did:reg:main:skill:web-search%401.0.0")).toEqual({ page: "entry", did });
    expect(explorerAddress("/entries/did%3Areg%3Amain%3Askill%3Aweb-search")).toEqual({
      page: "entry",
      did: "did:reg:main:skill:web-search",
    });
  });

  it("leaves the API's paths, hidden or unknown assets and malformed escapes to the API", () => {
    for (const path of [
      "/v1/entries/did:reg:main:skill:x",
      "/.well-known/jwks.json",
      "/openapi.json",
      "/docs",
      "/healthz",
      "/readyz",
      "/metrics",
      "/checkpoint",
      "/tile/0/000",
      "/registry.v1.RegistryService/ResolveEntry",
      "/entries/",
      "/entries/%E0%A4%A",
      "/assets/../index.html",
      "/assets/.hidden.js",
      "/assets/index.js.br",
      "/search/more",
    ])
      expect(explorerAddress(path), path).toBeUndefined();
  });
});
