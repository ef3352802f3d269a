import { describe, expect, it } from "vitest";
import { runKeyCommand } from "../../src/cli/key-commands.js";
import { joinOptionValues } from "../../src/cli/option-values.js";
import { encodePrivateKey, keyPairFromSeed, verifyRevocationSignature } from "../../src/sdk/index.js";

describe("option values that start with a dash", () => {
  it("joins a value-taking option with its value, and leaves flags, positionals and everything after -- alone", () => {
    const options = { key: { type: "string" }, did: { type: "string", short: "d" }, help: { type: "boolean", short: "h" } };
    expect(joinOptionValues(["--key", "-AAAA", "-d", "-x", "--help", "pos", "--", "--key", "-B"], options)).toEqual([
      "--key=-AAAA",
      "-d=-x",
      "--help",
      "pos",
      "--",
      "--key",
      "-B",
    ]);
    expect(joinOptionValues(["--key", "plain"], options)).toEqual(["--key", "plain"]);
  });

  it("signs with a key whose base64url text starts with '-' (one generated key in 64)", async () => {
    // A first byte of 0xF8 makes the first base64url character index 62: "-".
    const seed = new Uint8Array(32).fill(7);
    seed[0] = 0xf8;
    const keyText = encodePrivateKey(seed);
    expect(keyText.startsWith("-")).toBe(true);
    const key = await keyPairFromSeed(seed);
    const did = "did:reg:main:skill:dash-key@1.0.0";
    let stdout = "";
    let stderr = "";
    const code = await runKeyCommand(["sign", "revoke", "--key", keyText, "--did", did, "--reason", "-x marks the spot"], {
      stdout: (text) => void (stdout += text),
      stderr: (text) => void (stderr += text),
    });
    expect(code, stderr).toBe(0);
    const { signature, reason } = JSON.parse(stdout) as { signature: string; reason: string };
    expect(reason).toBe("-x marks the spot");
    expect(await verifyRevocationSignature(did, reason, signature, key.did)).toBe(true);
  });
});
