import { getTextEncoding } from "@bufbuild/protobuf/wire";
import { describe, expect, it } from "vitest";
import { useNodeTextEncoding } from "../../src/transport/node-text-encoding.js";

describe("protobuf string encoding through Buffer", () => {
  it("writes the same UTF-8 bytes as TextEncoder, lone surrogates included", () => {
    useNodeTextEncoding();
    const { encodeUtf8 } = getTextEncoding();
    const standard = new TextEncoder();
    const samples = [
      "",
      "did:reg:main:skill:web-search@1.2.0",
      "é中文🙂",
      "lone \ud800 high",
      "lone \udc00 low",
      "\u0000nul",
      "x".repeat(10_000),
    ];
    for (const text of samples) {
      expect(Buffer.from(encodeUtf8(text)).equals(Buffer.from(standard.encode(text))), JSON.stringify(text.slice(0, 20))).toBe(true);
    }
  });
});
