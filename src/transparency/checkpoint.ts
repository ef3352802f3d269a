/**
 * C2SP tlog-checkpoint bodies (c2sp.org/tlog-checkpoint): the origin line naming the log, the tree
 * size in decimal, the root hash in base64, and optional extension lines. Signed as a note
 * (signed-note.ts). Pure and browser-safe.
 */
import { HASH_SIZE } from "./merkle.js";
import { base64, fromBase64, NoteError } from "./signed-note.js";

export interface Checkpoint {
  /** The log's unique name, e.g. "registry.example/log". */
  readonly origin: string;
  readonly size: number;
  readonly rootHash: Uint8Array;
  /** Further lines, which this log does not write but a checkpoint may carry. */
  readonly extensions: readonly string[];
}

/** The note text of a checkpoint, ending in a newline. */
export function formatCheckpoint(checkpoint: Checkpoint): string {
  if (checkpoint.origin === "" || /\n/.test(checkpoint.origin)) throw new NoteError("a checkpoint's origin is one non-empty line");
  if (!Number.isSafeInteger(checkpoint.size) || checkpoint.size < 0) throw new NoteError("a checkpoint's size is a non-negative integer");
  if (checkpoint.rootHash.length !== HASH_SIZE) throw new NoteError("a checkpoint's root hash has 32 bytes");
  const lines = [checkpoint.origin, String(checkpoint.size), base64(checkpoint.rootHash), ...checkpoint.extensions];
  return `${lines.join("\n")}\n`;
}

/** A checkpoint from its note text (already verified by openNote), refusing any malformed line. */
export function parseCheckpoint(text: string): Checkpoint {
  if (!text.endsWith("\n")) throw new NoteError("a checkpoint ends with a newline");
  const [origin, sizeText, rootText, ...extensions] = text.slice(0, -1).split("\n");
  if (origin === undefined || origin === "") throw new NoteError("a checkpoint starts with its origin line");
  if (sizeText === undefined || !/^(0|[1-9][0-9]*)$/.test(sizeText) || !Number.isSafeInteger(Number(sizeText))) {
    throw new NoteError("a checkpoint's second line is the tree size in decimal");
  }
  const rootHash = rootText === undefined ? undefined : fromBase64(rootText);
  if (rootHash === undefined || rootHash.length !== HASH_SIZE) throw new NoteError("a checkpoint's third line is the base64 root hash");
  if (extensions.some((line) => line === "")) throw new NoteError("a checkpoint's extension lines are not empty");
  return { origin, size: Number(sizeText), rootHash, extensions };
}
