import type { DescMessage, Message } from "@bufbuild/protobuf";
import { createContextKey, type ContextValues } from "@connectrpc/connect";
import { hasNoSideEffects, type UnaryMethod } from "./unary-method.js";

/**
 * What the transport asks of a store of answers to reads (src/edge/read-answers.ts is one): each
 * request as it arrived (a REST URL, a Connect GET query, an RPC body) names a slot holding what
 * it decoded to and, while current, the answer kept for it, so that asking again skips decoding
 * the request and running the handler. Only methods marked NO_SIDE_EFFECTS are considered.
 */
export interface ReadAnswers {
  /** The slot of a request seen before, or undefined. */
  find(key: string): ReadSlot | undefined;
  /** Remembers a request decoded for the first time (or again, after it was forgotten). */
  remember(key: string, decoded: unknown): ReadSlot;
  readonly size: number;
  readonly bytes: number;
}

/** An answer kept for a request: the handler's message and the headers it set. */
export interface KeptAnswer {
  readonly message: Message;
  readonly header: readonly (readonly [string, string])[];
}

/** One remembered request: what it decoded to, and the answer kept for it while that is current. */
export interface ReadSlot {
  readonly key: string;
  readonly decoded: unknown;
  /** The kept answer, if there is one and it is still current. */
  answer(): KeptAnswer | undefined;
  /** Read before the handler runs: `keep` refuses the answer if anything changed since. */
  mark(): number;
  keep(mark: number, schema: DescMessage, message: Message, header: KeptAnswer["header"], tag: string): void;
}

/** Longest request remembered: a resolve's key is well under it; larger requests are decoded each time. */
export const MAX_KEY_CHARS = 2_048;

/** A request decoded: the method it calls and its message, with whatever else its protocol needs. */
export interface DecodedRequest {
  readonly target: UnaryMethod;
  readonly input: Message;
}

/**
 * The request `key` names, decoded once: from its slot when it was seen before, else by `decode`,
 * then remembered when it calls a read. Without a store, or with no key (a request too large to
 * remember), it is decoded every time and has no slot. A remembered message is frozen: it is
 * handed to every later call of the same request, so no handler or interceptor may change it.
 */
export async function decodeOnce<D extends DecodedRequest>(
  answers: ReadAnswers | undefined,
  key: string | undefined,
  decode: () => Promise<D> | D,
): Promise<{ decoded: D; slot?: ReadSlot }> {
  if (answers === undefined || key === undefined || key.length > MAX_KEY_CHARS) return { decoded: await decode() };
  const seen = answers.find(key);
  if (seen !== undefined) return { decoded: seen.decoded as D, slot: seen };
  const decoded = await decode();
  if (!hasNoSideEffects(decoded.target)) return { decoded };
  Object.freeze(decoded.input);
  return { decoded, slot: answers.remember(key, decoded) };
}

/** The tag an answer is kept under, set by its handler. */
const keptTagKey = createContextKey<string | undefined>(undefined, { description: "kept answer tag" });

/**
 * Called by a read's handler: its answer may be kept for the same request until `tag` changes (or
 * the store's backstop expires). Handlers that never call it have their answers computed every time.
 */
export function keepAnswer(values: ContextValues, tag: string): void {
  values.set(keptTagKey, tag);
}

/** The tag a handler kept its answer under, if it did. */
export function keptAnswerTag(values: ContextValues): string | undefined {
  return values.get(keptTagKey);
}
