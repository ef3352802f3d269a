import { createPublicKey, verify } from "node:crypto";
import { describe, expect, it } from "vitest";
import { noteSignerFromSeed } from "../../src/storage/log-signing-key.js";
import { formatCheckpoint, parseCheckpoint } from "../../src/transparency/checkpoint.js";
import { nodeSha256 } from "../../src/transparency/node-merkle-hasher.js";
import { NoteError, noteKeyId, openNote, parseVerifierKey, signNote, verifierKeyText } from "../../src/transparency/signed-note.js";

/**
 * Known answers from the documentation of Go's golang.org/x/mod/sumdb/note, the reference
 * implementation of C2SP signed notes (data only): its example signer key, verifier key, text and
 * signed note. Ed25519 is deterministic, so signing that text with that key must give these bytes.
 */
const GO_SIGNER_KEY = "PRIVATE+KEY+PeterNeumann+c74f20a3+AYEKFALVFGyNhPJEMzD1QIDr+Y7hfZx09iUvxdXHKDFz";
const GO_VERIFIER_KEY = "PeterNeumann+c74f20a3+ARpc2QcUPDhMQegwxbzhKqiBfsVkmqq/LDE4izWy10TW";
const GO_TEXT = "If you think cryptography is the answer to your problem,\nthen you don't know what your problem is.\n";
const GO_NOTE = `${GO_TEXT}\n\u2014 PeterNeumann x08go/ZJkuBS9UG/SffcvIAQxVBtiFupLLr8pAcElZInNIuGUgYN1FFYC2pZSNXgKvqfqdngotpRZb6KE6RyyBwJnAM=\n`;

const signerFromSeed = noteSignerFromSeed;

const goSigner = () => {
  // PRIVATE+KEY+<name>+<key id>+<base64(0x01 || seed)>, whose base64 may itself hold "+".
  const [, , name, , ...encoded] = GO_SIGNER_KEY.split("+") as [string, string, string, string, ...string[]];
  return signerFromSeed(name, new Uint8Array(Buffer.from(encoded.join("+"), "base64")).slice(1));
};

const nodeVerify = (publicKey: Uint8Array, message: Uint8Array, signature: Uint8Array): boolean =>
  verify(
    null,
    message,
    createPublicKey({ key: { kty: "OKP", crv: "Ed25519", x: Buffer.from(publicKey).toString("base64url") }, format: "jwk" }),
    signature,
  );

describe("signed notes, against the Go reference implementation's example", () => {
  it("makes the same key ID, verifier key and signed note, byte for byte", async () => {
    const signer = goSigner();
    expect(Buffer.from(noteKeyId(signer, nodeSha256)).toString("hex")).toBe("c74f20a3");
    expect(verifierKeyText(signer, nodeSha256)).toBe(GO_VERIFIER_KEY);
    expect(await signNote(GO_TEXT, signer, nodeSha256)).toBe(GO_NOTE);
  });

  it("opens the reference note with the reference verifier key", async () => {
    const key = parseVerifierKey(GO_VERIFIER_KEY, nodeSha256);
    expect(await openNote(GO_NOTE, key, nodeVerify, nodeSha256)).toBe(GO_TEXT);
  });

  it("refuses a changed text, a changed signature, another key's name, and malformed notes", async () => {
    const key = parseVerifierKey(GO_VERIFIER_KEY, nodeSha256);
    await expect(openNote(GO_NOTE.replace("problem,", "problem;"), key, nodeVerify, nodeSha256)).rejects.toThrow(/does not verify/);
    await expect(openNote(GO_NOTE.replace("x08go", "x08gp"), key, nodeVerify, nodeSha256)).rejects.toThrow(NoteError);
    await expect(openNote(GO_NOTE.replace("\u2014 PeterNeumann", "\u2014 Someone"), key, nodeVerify, nodeSha256)).rejects.toThrow(
      /not signed by/,
    );
    await expect(openNote(GO_TEXT, key, nodeVerify, nodeSha256)).rejects.toThrow(NoteError);
    await expect(openNote(GO_NOTE.replace("\n\n", "\n\u0007\n"), key, nodeVerify, nodeSha256)).rejects.toThrow(NoteError);
    expect(() => parseVerifierKey(GO_VERIFIER_KEY.replace("c74f20a3", "c74f20a4"), nodeSha256)).toThrow(/ID does not match/);
  });

  it("reads a verifier key whose base64 holds a '+'", () => {
    for (let fill = 0; fill < 64; fill++) {
      const signer = signerFromSeed("registry.example/log", new Uint8Array(32).fill(fill));
      const text = verifierKeyText(signer, nodeSha256);
      expect(parseVerifierKey(text, nodeSha256).publicKey).toEqual(signer.publicKey);
    }
  });

  it("ignores other keys' signatures, as witnesses add them", async () => {
    const other = signerFromSeed("witness.example/w1", new Uint8Array(32).fill(7));
    const cosigned = (await signNote(GO_TEXT, other, nodeSha256)).slice(GO_TEXT.length + 1);
    const key = parseVerifierKey(GO_VERIFIER_KEY, nodeSha256);
    expect(await openNote(`${GO_NOTE}${cosigned}`, key, nodeVerify, nodeSha256)).toBe(GO_TEXT);
  });
});

describe("checkpoints", () => {
  it("format and parse: origin, decimal size, base64 root", () => {
    const checkpoint = { origin: "registry.example/log", size: 1234, rootHash: new Uint8Array(32).fill(0xab), extensions: [] };
    const text = formatCheckpoint(checkpoint);
    expect(text).toBe(`registry.example/log\n1234\n${Buffer.alloc(32, 0xab).toString("base64")}\n`);
    expect(parseCheckpoint(text)).toEqual(checkpoint);
  });

  it("refuses a size with a sign or leading zero, a short root, a missing origin", () => {
    const root = Buffer.alloc(32, 1).toString("base64");
    for (const text of [
      `o\n-1\n${root}\n`,
      `o\n01\n${root}\n`,
      `o\n1\n${Buffer.alloc(31).toString("base64")}\n`,
      `\n1\n${root}\n`,
      `o\n1\n${root}`,
    ]) {
      expect(() => parseCheckpoint(text), JSON.stringify(text)).toThrow(NoteError);
    }
  });
});
