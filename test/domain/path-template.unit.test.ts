import { describe, expect, it } from "vitest";
import { matchPathTemplate, parsePathTemplate, PathEncodingError, PathTemplateError } from "../../src/edge/path-template.js";

/** The variables of a match as a plain object, or undefined when the path does not match. */
function match(template: string, path: string): Record<string, string> | undefined {
  const values = matchPathTemplate(parsePathTemplate(template), path);
  return values === undefined ? undefined : Object.fromEntries(values);
}

describe("parsePathTemplate", () => {
  it("parses literals and a single-segment variable", () => {
    const template = parsePathTemplate("/v1/entries/{did}");
    expect(template.segments).toEqual([{ kind: "literal", value: "v1" }, { kind: "literal", value: "entries" }, { kind: "any" }]);
    expect(template.variables).toEqual([{ fieldPath: "did", start: 2, end: 3 }]);
    expect(template.verb).toBeUndefined();
  });

  it("parses a variable followed by a literal", () => {
    const template = parsePathTemplate("/v1/entries/{did}/versions");
    expect(template.segments.map((s) => s.kind)).toEqual(["literal", "literal", "any", "literal"]);
    expect(template.variables).toEqual([{ fieldPath: "did", start: 2, end: 3 }]);
  });

  it("parses literal segments with dots and dashes", () => {
    const template = parsePathTemplate("/.well-known/jwks.json");
    expect(template.segments).toEqual([
      { kind: "literal", value: ".well-known" },
      { kind: "literal", value: "jwks.json" },
    ]);
    expect(template.variables).toEqual([]);
  });

  it("parses a multi-segment variable pattern", () => {
    const template = parsePathTemplate("/v1/{name=projects/*/things/*}");
    expect(template.segments).toEqual([
      { kind: "literal", value: "v1" },
      { kind: "literal", value: "projects" },
      { kind: "any" },
      { kind: "literal", value: "things" },
      { kind: "any" },
    ]);
    expect(template.variables).toEqual([{ fieldPath: "name", start: 1, end: 5 }]);
  });

  it("parses a variable of ** as running to the end", () => {
    const template = parsePathTemplate("/v1/{name=**}");
    expect(template.segments).toEqual([{ kind: "literal", value: "v1" }, { kind: "rest" }]);
    expect(template.variables).toEqual([{ fieldPath: "name", start: 1, end: -1 }]);
  });

  it("parses a verb and a nested field path", () => {
    const template = parsePathTemplate("/v1/{operation.name=operations/*}:cancel");
    expect(template.verb).toBe("cancel");
    expect(template.variables).toEqual([{ fieldPath: "operation.name", start: 1, end: 3 }]);
    expect(parsePathTemplate("/v1/entries:batchGet").verb).toBe("batchGet");
    expect(parsePathTemplate("/v1/entries:batchGet").segments).toEqual([
      { kind: "literal", value: "v1" },
      { kind: "literal", value: "entries" },
    ]);
  });

  it.each(["v1/entries", "/v1//entries", "/v1/{did", "/v1/{did}x", "/v1/entries/", "/v1/a{b}"])("refuses %j", (source) => {
    expect(() => parsePathTemplate(source)).toThrow(PathTemplateError);
  });
});

describe("matchPathTemplate", () => {
  const DID = "did:reg:main:skill:web-search";

  it("matches a DID with a literal @ and keeps it", () => {
    expect(match("/v1/entries/{did}", `/v1/entries/${DID}@1.0.0`)).toEqual({ did: `${DID}@1.0.0` });
  });

  it("decodes %40 and %3A in a single-segment variable", () => {
    expect(match("/v1/entries/{did}", `/v1/entries/${DID}%401.0.0`)).toEqual({ did: `${DID}@1.0.0` });
    expect(match("/v1/entries/{did}", "/v1/entries/did%3Areg%3Amain%3Askill%3Ax")).toEqual({ did: "did:reg:main:skill:x" });
    expect(match("/v1/entries/{did}", "/v1/entries/caf%C3%A9%20x")).toEqual({ did: "café x" });
  });

  it("decodes %2F in a single-segment variable, which then cannot be a separator", () => {
    expect(match("/v1/entries/{did}", "/v1/entries/a%2Fb")).toEqual({ did: "a/b" });
    expect(match("/v1/entries/{did}/versions", "/v1/entries/a%2Fb/versions")).toEqual({ did: "a/b" });
    expect(match("/v1/entries/{did}", "/v1/entries/a/b")).toBeUndefined();
  });

  it("tells the versions route from the entry route", () => {
    expect(match("/v1/entries/{did}", `/v1/entries/${DID}/versions`)).toBeUndefined();
    expect(match("/v1/entries/{did}/versions", `/v1/entries/${DID}/versions`)).toEqual({ did: DID });
    expect(match("/v1/entries/{did}/versions", `/v1/entries/${DID}/version`)).toBeUndefined();
    expect(match("/v1/entries/{did}/versions", `/v1/entries/${DID}/versions/`)).toBeUndefined();
  });

  it("matches literals exactly and needs a non-empty segment for a variable", () => {
    expect(match("/.well-known/jwks.json", "/.well-known/jwks.json")).toEqual({});
    expect(match("/.well-known/jwks.json", "/.well-known/jwks.jsonx")).toBeUndefined();
    expect(match("/.well-known/jwks.json", "/.well-known/JWKS.json")).toBeUndefined();
    expect(match("/v1/entries/{did}", "/v1/entries/")).toBeUndefined();
    expect(match("/v1/entries/{did}", "/v1/entries")).toBeUndefined();
    expect(match("/v1/entries/{did}", "/v2/entries/x")).toBeUndefined();
    expect(match("/v1/entries/{did}", "v1/entries/x")).toBeUndefined();
  });

  it("matches a multi-segment pattern and returns the segments joined", () => {
    const template = "/v1/{name=projects/*/things/*}";
    expect(match(template, "/v1/projects/p1/things/t-2")).toEqual({ name: "projects/p1/things/t-2" });
    expect(match(template, "/v1/projects/p1/others/t-2")).toBeUndefined();
    expect(match(template, "/v1/projects/p1/things")).toBeUndefined();
    expect(match(template, "/v1/projects/p1/things/t/extra")).toBeUndefined();
    expect(match(template, "/v1/projects//things/t")).toBeUndefined();
  });

  it("keeps %2F encoded in a multi-segment variable, and decodes everything else", () => {
    const template = "/v1/{name=projects/*/things/*}";
    expect(match(template, "/v1/projects/a%2Fb/things/c%40d")).toEqual({ name: "projects/a%2Fb/things/c@d" });
    expect(match("/v1/{name=**}", "/v1/a/b%2Fc/d%20e")).toEqual({ name: "a/b%2Fc/d e" });
  });

  it("keeps %2F encoded in a ** variable even when it matched a single segment", () => {
    // google.api.http: a variable whose template has several segments, such as {var=**}, decodes
    // everything except %2F, however many segments the path supplied; otherwise "/v1/a%2Fb" would
    // yield "a/b", the same value as "/v1/a/b".
    expect(match("/v1/{name=**}", "/v1/a%2Fb")).toEqual({ name: "a%2Fb" });
  });

  it("matches ** across any number of segments", () => {
    expect(match("/v1/{name=**}", "/v1/a")).toEqual({ name: "a" });
    expect(match("/v1/{name=**}", "/v1/a/b/c")).toEqual({ name: "a/b/c" });
    expect(match("/v1/{name=**}", "/v2/a")).toBeUndefined();
  });

  it("matches a verb only when present", () => {
    const template = "/v1/{name=operations/*}:cancel";
    expect(match(template, "/v1/operations/op-1:cancel")).toEqual({ name: "operations/op-1" });
    expect(match(template, "/v1/operations/op-1")).toBeUndefined();
    expect(match(template, "/v1/operations/op-1:stop")).toBeUndefined();
    expect(match("/v1/entries:batchGet", "/v1/entries:batchGet")).toEqual({});
    expect(match("/v1/entries:batchGet", "/v1/entries")).toBeUndefined();
    // Without a verb in the template, a colon is part of the variable (DIDs are full of them).
    expect(match("/v1/entries/{did}", "/v1/entries/x:cancel")).toEqual({ did: "x:cancel" });
  });
});

describe("variables that do not decode", () => {
  it.each(["%", "%zz", "%C3", "%FF", "%ED%A0%80", "%C0%AF"])("%s names the variable rather than missing the route", (encoded) => {
    const template = parsePathTemplate("/v1/entries/{did}/versions");
    expect(() => matchPathTemplate(template, `/v1/entries/x${encoded}/versions`)).toThrow(PathEncodingError);
    expect(() => matchPathTemplate(template, `/v1/entries/x${encoded}/versions`)).toThrow(/^did: /);
    // A path of another shape is still no match, whatever it holds.
    expect(matchPathTemplate(template, `/v1/entries/x${escape}`)).toBeUndefined();
  });

  it("in a multi-segment variable too", () => {
    expect(() => match("/v1/{name=**}", "/v1/a/%ZZ")).toThrow(PathEncodingError);
    expect(() => match("/v1/{name=projects/*/things/*}", "/v1/projects/%E0%A4%A/things/x")).toThrow(/^name: /);
  });
});
