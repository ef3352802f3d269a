import { create, ScalarType, type DescMethodUnary, type Message } from "@bufbuild/protobuf";
import { MethodOptions_IdempotencyLevel } from "@bufbuild/protobuf/wkt";
import type { HandlerContext } from "@connectrpc/connect";
import type { ChangeFeed } from "../storage/entry-cache.js";
import { freezeWithEncodings, responseBinaryBytes } from "./rpc/reused-encodings.js";
import type { ServedService } from "./served-services.js";

/**
 * Answers to reads, kept per request, so that asking again skips the handler and the answer's
 * encoding. A decorator over the methods' implementations, applied where services are registered:
 * every path that serves a method (the unary fast path, Connect's adapter, REST) answers from the
 * same kept answer, and everything around the handler still runs each time: interceptors (rate
 * limits, error mapping), headers, the access line and the metrics.
 *
 * Which reads are kept is declared once (method-policies.ts), each with the tag that changes when
 * its answer would: the name of the entry it reads. The tags arrive from the entry cache, which hears of this process's
 * writes at once and of other processes' through the change feed, so a kept answer is never older
 * than what the entry cache would have served. As there, an answer whose handler ran while any
 * change arrived is not kept, and nothing is kept while the feed is down.
 */

export interface ReadAnswersOptions {
  /** Where changes are heard of: each names the tag of the answers it makes stale. */
  readonly changes: ChangeFeed;
  /** Most answers kept; the least recently used go first. */
  readonly maxRequests?: number;
  /** Most memory the kept answers may take, estimated from their encoded size. */
  readonly maxBytes?: number;
  /** Longest an answer is kept, as a backstop behind the change feed. */
  readonly ttlMs?: number;
  readonly now?: () => number;
  /** Told of every call of a method whose answers may be kept: whether it was answered from here (for metrics). */
  readonly onRead?: (kept: boolean) => void;
}

/** A read whose answers are kept: its method, and the tag of a request (undefined: not kept). */
export interface KeptRead {
  readonly method: DescMethodUnary;
  tagOf(request: never): string | undefined;
}

export interface ReadAnswers {
  /** `served`, its methods named in `reads` answering from here when they can. */
  decorate(served: ServedService, reads: readonly KeptRead[]): ServedService;
  readonly size: number;
  readonly bytes: number;
}

/** An answer kept for a request: the frozen message, and the headers its handler set. */
interface KeptAnswer {
  readonly key: string;
  readonly message: Message;
  readonly header: readonly (readonly [string, string])[];
  readonly tag: string;
  readonly storedAt: number;
  readonly bytes: number;
}

/** What a kept answer costs besides three times its binary size (message, encodings), and its key. */
const ANSWER_OVERHEAD_BYTES = 768;

/**
 * The request-key function of a read: a request's key is its method's path and the values of its
 * fields, one a line. Only requests made of singular scalar fields, at most one of them text (the
 * only values that can hold a line break, so a key reads back one way), have one: equal keys are
 * equal requests. The path is joined once, here, not per call. Throws for a method whose answers
 * cannot be kept.
 */
export function requestKeyOf(method: DescMethodUnary): (request: Message) => string {
  if (method.idempotency !== MethodOptions_IdempotencyLevel.NO_SIDE_EFFECTS) {
    throw new Error(`${method.parent.typeName}.${method.name}: only unary methods marked NO_SIDE_EFFECTS may have their answers kept`);
  }
  const fields = method.input.fields;
  const strings = fields.filter((field) => field.fieldKind === "scalar" && field.scalar === ScalarType.STRING).length;
  if (fields.some((field) => field.fieldKind !== "scalar" && field.fieldKind !== "enum") || strings > 1) {
    throw new Error(
      `${method.parent.typeName}.${method.name}: a kept answer's request must be scalar fields, at most one of them a string`,
    );
  }
  const prefix = `/${method.parent.typeName}/${method.name}\n`;
  const names = fields.map((field) => field.localName);
  return (request) => {
    const values = request as unknown as Record<string, unknown>;
    let key = prefix;
    for (const name of names) key += `${String(values[name])}\n`;
    return key;
  };
}

export function createReadAnswers(options: ReadAnswersOptions): ReadAnswers {
  const maxRequests = options.maxRequests ?? 10_000;
  const maxBytes = options.maxBytes ?? 32 * 1024 * 1024;
  const ttlMs = options.ttlMs ?? 60_000;
  const now = options.now ?? Date.now;
  const onRead = options.onRead ?? (() => {});
  const { changes: feed } = options;
  const answers = new Map<string, KeptAnswer>();
  /** The keys of the kept answers, by the tag that makes them stale. */
  const byTag = new Map<string, Set<string>>();
  let bytes = 0;
  let changes = 0;

  function forget(key: string): void {
    const kept = answers.get(key);
    if (kept === undefined) return;
    answers.delete(key);
    bytes -= kept.bytes;
    const tagged = byTag.get(kept.tag);
    tagged?.delete(key);
    if (tagged?.size === 0) byTag.delete(kept.tag);
  }

  feed.subscribe({
    onChange(tag) {
      changes++;
      const tagged = byTag.get(tag);
      if (tagged !== undefined) for (const key of [...tagged]) forget(key);
    },
    onReset() {
      changes++;
      answers.clear();
      byTag.clear();
      bytes = 0;
    },
  });

  function find(key: string): KeptAnswer | undefined {
    const kept = answers.get(key);
    if (kept === undefined) return undefined;
    if (!feed.live || now() - kept.storedAt > ttlMs) {
      forget(key);
      return undefined;
    }
    // Re-inserting keeps the Map in least-recently-used order.
    answers.delete(key);
    answers.set(key, kept);
    return kept;
  }

  function keep(key: string, method: DescMethodUnary, message: Message, header: KeptAnswer["header"], tag: string): void {
    forget(key);
    const size = ANSWER_OVERHEAD_BYTES + 2 * key.length + 3 * responseBinaryBytes(method.output, message).byteLength;
    answers.set(key, { key, message, header, tag, storedAt: now(), bytes: size });
    let tagged = byTag.get(tag);
    if (tagged === undefined) byTag.set(tag, (tagged = new Set()));
    tagged.add(key);
    bytes += size;
    // The Map iterates least recently used first.
    while (answers.size > maxRequests || (bytes > maxBytes && answers.size > 0)) forget(answers.keys().next().value as string);
  }

  function keeping(read: KeptRead, impl: (request: never, context: HandlerContext) => unknown) {
    const { method } = read;
    const keyOf = requestKeyOf(method);
    return async (request: Message, context: HandlerContext): Promise<unknown> => {
      const key = keyOf(request);
      const kept = find(key);
      onRead(kept !== undefined);
      if (kept !== undefined) {
        for (const [name, value] of kept.header) context.responseHeader.set(name, value);
        return kept.message;
      }
      // Worked out on a miss only: a kept answer already has its tag.
      const tag = read.tagOf(request as never);
      if (tag === undefined) return impl(request as never, context);
      const mark = changes;
      const before = new Set(context.responseHeader.keys());
      const answered = await impl(request as never, context);
      if (!feed.live || changes !== mark) return answered;
      const message = freezeWithEncodings(method.output, create(method.output, answered as never));
      const header = [...context.responseHeader].filter(([name]) => !before.has(name));
      keep(key, method, message, header, tag);
      return message;
    };
  }

  return {
    decorate(served, reads) {
      const impl: Record<string, unknown> = { ...served.impl };
      for (const read of reads) {
        const fn = served.impl[read.method.localName];
        if (read.method.parent !== served.service || typeof fn !== "function") continue;
        impl[read.method.localName] = keeping(read, (fn as (request: never, context: HandlerContext) => unknown).bind(served.impl));
      }
      return { service: served.service, impl };
    },
    get size() {
      return answers.size;
    },
    get bytes() {
      return bytes;
    },
  };
}
