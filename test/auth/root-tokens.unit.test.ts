import { createHash } from "node:crypto";
import { describe, expect, it } from "vitest";
import {
  canGrantScope,
  generateRootToken,
  generateRootTokenId,
  hashRootToken,
  isKnownScope,
  isRootTokenId,
  knownScopes,
  looksLikeRootToken,
} from "../../src/auth/root-tokens.js";

describe("root tokens", () => {
  it("carry 256 random bits, base64url, behind the regrt_ prefix", () => {
    const tokens = Array.from({ length: 200 }, generateRootToken);
    for (const token of tokens) {
      expect(token).toMatch(/^regrt_[A-Za-z0-9_-]{43}$/);
      expect(Buffer.from(token.slice(6), "base64url")).toHaveLength(32);
      expect(looksLikeRootToken(token)).toBe(true);
    }
    expect(new Set(tokens).size).toBe(tokens.length);
  });

  it("are told apart from other credentials", () => {
    expect(looksLikeRootToken("regrt_short")).toBe(false);
    expect(looksLikeRootToken(`rt_${"a".repeat(43)}`)).toBe(false);
    expect(looksLikeRootToken("eyJhbGciOiJFZERTQSJ9.eyJzdWIiOiJ4In0.c2ln")).toBe(false);
    expect(looksLikeRootToken(`${generateRootToken()}x`)).toBe(false);
  });

  it("have short non-secret ids", () => {
    const id = generateRootTokenId();
    expect(id).toMatch(/^rt_[0-9a-f]{16}$/);
    expect(isRootTokenId(id)).toBe(true);
    expect(isRootTokenId("rt_xyz")).toBe(false);
    expect(generateRootTokenId()).not.toBe(id);
  });

  it("are hashed with SHA-256", () => {
    const token = generateRootToken();
    expect(hashRootToken(token).equals(createHash("sha256").update(token).digest())).toBe(true);
    expect(hashRootToken(token)).toHaveLength(32);
  });
});

describe("scopes", () => {
  const entryTypes = ["skill", "agent"];

  it("are the configured publish scopes, publish.* and admin", () => {
    expect(knownScopes(entryTypes)).toEqual(["registry.publish.skill", "registry.publish.agent", "registry.publish.*", "registry.admin"]);
    for (const scope of knownScopes(entryTypes)) expect(isKnownScope(scope, entryTypes)).toBe(true);
    for (const scope of ["registry.publish.widget", "registry.publish.", "registry.read", "", "registry.admin "]) {
      expect(isKnownScope(scope, entryTypes), scope).toBe(false);
    }
  });

  it("are grantable when held, publish ones also through publish.*, admin only through itself", () => {
    expect(canGrantScope(["registry.publish.skill"], "registry.publish.skill")).toBe(true);
    expect(canGrantScope(["registry.publish.skill"], "registry.publish.agent")).toBe(false);
    expect(canGrantScope(["registry.publish.skill"], "registry.publish.*")).toBe(false);
    expect(canGrantScope(["registry.publish.*"], "registry.publish.agent")).toBe(true);
    expect(canGrantScope(["registry.publish.*"], "registry.publish.*")).toBe(true);
    expect(canGrantScope(["registry.publish.*"], "registry.admin")).toBe(false);
    expect(canGrantScope(["registry.admin"], "registry.publish.skill")).toBe(false);
    expect(canGrantScope(["registry.admin"], "registry.admin")).toBe(true);
  });
});
