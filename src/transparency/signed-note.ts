/**
 * C2SP signed notes (c2sp.org/signed-note) with Ed25519 signatures: the envelope the log's
 * checkpoints travel in, so any tlog client (Go's sumdb/note, Sigstore's, witnesses) can check
 * them. Pure and browser-safe: SHA-256 and Ed25519 are passed in.
 */
import type { Sha256 } from "./merkle.js";

/** The signature type byte of plain Ed25519 in a key ID and a verifier key. */
const ED25519_TYPE = 0x01;
const KEY_ID_BYTES = 4;
const SIGNATURE_BYTES = 64;
const SIGNATURE_PREFIX = "\u2014 ";
// biome-ignore lint/suspicious/noControlCharactersInRegex: these characters are what a note may not hold
const CONTROL_BUT_NEWLINE = /[\u0000-\u0009\u000b-\u001f]/;

export class NoteError extends Error {}

/** A key as notes name it. */
export interface NoteKey {
  /** Schema-less URL-like name, e.g. "registry.example/log"; no spaces, "+" or newlines. */
  readonly name: string;
  /** The 32-byte Ed25519 public key. */
  readonly publicKey: Uint8Array;
}

export interface NoteSigner extends NoteKey {
  sign(message: Uint8Array): Promise<Uint8Array> | Uint8Array;
}

export type Ed25519Verify = (publicKey: Uint8Array, message: Uint8Array, signature: Uint8Array) => Promise<boolean> | boolean;

export interface NoteSignature {
  readonly name: string;
  readonly keyId: Uint8Array;
  readonly signature: Uint8Array;
}

/** SHA-256(name || 0x0A || 0x01 || public key)[:4]: with the name, what a signature line says it was made by. */
export function noteKeyId(key: NoteKey, sha256: Sha256): Uint8Array {
  checkKeyName(key.name);
  const name = utf8(key.name);
  return sha256(concat(name, Uint8Array.of(0x0a, ED25519_TYPE), key.publicKey)).slice(0, KEY_ID_BYTES);
}

/** The verifier key text, `<name>+<key ID hex>+<base64(0x01 || public key)>`, as tlog clients configure it. */
export function verifierKeyText(key: NoteKey, sha256: Sha256): string {
  return `${key.name}+${hex(noteKeyId(key, sha256))}+${base64(concat(Uint8Array.of(ED25519_TYPE), key.publicKey))}`;
}

/** A verifier key text back into its key; refuses one whose ID does not match its name and key. */
export function parseVerifierKey(text: string, sha256: Sha256): NoteKey {
  // The name has no "+" and the ID is hex, but base64 may hold "+": only the first two separate.
  const first = text.indexOf("+");
  const second = text.indexOf("+", first + 1);
  if (first <= 0 || second < 0) throw new NoteError("a verifier key is <name>+<key id>+<key>");
  const [name, idHex, keyText] = [text.slice(0, first), text.slice(first + 1, second), text.slice(second + 1)];
  const encoded = fromBase64(keyText);
  if (encoded === undefined || encoded.length !== 33 || encoded[0] !== ED25519_TYPE) throw new NoteError("not an Ed25519 verifier key");
  const key = { name, publicKey: encoded.slice(1) };
  if (hex(noteKeyId(key, sha256)) !== idHex) throw new NoteError("the verifier key's ID does not match its name and key");
  return key;
}

/** Signs `text` (which must end in a newline) as a note. */
export async function signNote(text: string, signer: NoteSigner, sha256: Sha256): Promise<string> {
  checkText(text);
  const signature = await signer.sign(utf8(text));
  if (signature.length !== SIGNATURE_BYTES) throw new NoteError("an Ed25519 signature has 64 bytes");
  return `${text}\n${SIGNATURE_PREFIX}${signer.name} ${base64(concat(noteKeyId(signer, sha256), signature))}\n`;
}

/** Splits a note into its text and signature lines, refusing anything malformed. */
export function parseNote(note: string): { text: string; signatures: NoteSignature[] } {
  if (CONTROL_BUT_NEWLINE.test(note)) throw new NoteError("a note holds no control characters but newlines");
  const split = note.lastIndexOf("\n\n");
  if (split < 0 || !note.endsWith("\n")) throw new NoteError("a note is its text, a blank line and signature lines");
  const text = note.slice(0, split + 1);
  const lines = note.slice(split + 2, -1).split("\n");
  const signatures = lines.map((line): NoteSignature => {
    if (!line.startsWith(SIGNATURE_PREFIX)) throw new NoteError("a signature line starts with an em dash and a space");
    const [name, encoded, extra] = line.slice(SIGNATURE_PREFIX.length).split(" ");
    const bytes = encoded === undefined ? undefined : fromBase64(encoded);
    if (name === undefined || name === "" || extra !== undefined || bytes === undefined || bytes.length <= KEY_ID_BYTES) {
      throw new NoteError("a signature line is <name> <base64(key id || signature)>");
    }
    return { name, keyId: bytes.slice(0, KEY_ID_BYTES), signature: bytes.slice(KEY_ID_BYTES) };
  });
  return { text, signatures };
}

/**
 * The note's text, once a signature by `key` verifies. Signatures by other keys are ignored (a
 * note may carry witnesses' cosignatures); one by `key` that fails rejects the whole note.
 */
export async function openNote(note: string, key: NoteKey, verify: Ed25519Verify, sha256: Sha256): Promise<string> {
  const { text, signatures } = parseNote(note);
  const keyId = noteKeyId(key, sha256);
  const mine = signatures.filter((signature) => signature.name === key.name && equalBytes(signature.keyId, keyId));
  if (mine.length === 0) throw new NoteError(`the note is not signed by ${key.name}`);
  for (const { signature } of mine) {
    if (signature.length !== SIGNATURE_BYTES || !(await verify(key.publicKey, utf8(text), signature))) {
      throw new NoteError(`the signature by ${key.name} does not verify`);
    }
  }
  return text;
}

function checkKeyName(name: string): void {
  if (name === "" || /[\s+]/.test(name)) throw new NoteError("a key name is not empty and has no spaces or '+'");
}

function checkText(text: string): void {
  if (!text.endsWith("\n")) throw new NoteError("a note's text ends with a newline");
  if (CONTROL_BUT_NEWLINE.test(text)) throw new NoteError("a note holds no control characters but newlines");
}

function utf8(text: string): Uint8Array {
  return new TextEncoder().encode(text);
}

function concat(...parts: Uint8Array[]): Uint8Array {
  const out = new Uint8Array(parts.reduce((sum, part) => sum + part.length, 0));
  let offset = 0;
  for (const part of parts) {
    out.set(part, offset);
    offset += part.length;
  }
  return out;
}

function hex(bytes: Uint8Array): string {
  return Array.from(bytes, (byte) => byte.toString(16).padStart(2, "0")).join("");
}

/** Standard base64 (RFC 4648 section 4, padded), as notes use it; no Buffer, for browsers. */
export function base64(bytes: Uint8Array): string {
  let binary = "";
  for (const byte of bytes) binary += String.fromCharCode(byte);
  return btoa(binary);
}

/** Standard padded base64 into bytes, or undefined when the text is not exactly that. */
export function fromBase64(text: string): Uint8Array | undefined {
  if (!/^(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?$/.test(text)) return undefined;
  const bytes = Uint8Array.from(atob(text), (char) => char.charCodeAt(0));
  return base64(bytes) === text ? bytes : undefined;
}

function equalBytes(a: Uint8Array, b: Uint8Array): boolean {
  return a.length === b.length && a.every((byte, index) => byte === b[index]);
}
