import { once } from "node:events";
import { Code } from "@connectrpc/connect";
import type { ChangeLogService } from "../changes/change-log-service.js";
import type { ChangeSink } from "../changes/head-fan-out.js";
import type { LoggedChange } from "../changes/change-log.js";
import { InvalidArgumentError } from "../errors.js";
import { changeMessage } from "./change-feed-handlers.js";
import { changeJson } from "./change-json.js";
import type { ClientAddressResolver } from "./client-address.js";
import { negotiateEncoding } from "../transport/compression.js";
import { endNodeExchange } from "./feed-stream-guard.js";
import type { HttpExchange } from "../transport/http-exchange.js";
import type { ExchangeLimit } from "./rate-limit-interceptor.js";
import { writeRestError } from "./rest-transcoder.js";
import { toConnectError } from "./error-mapping.js";
import { codeName } from "../transport/status-codes.js";
import { sseEventBytes, sseEventWriter, type SseEventBytes, type SseEventWriter } from "./sse-event-writer.js";
import type { StreamAdmission } from "./stream-admission.js";

/** Where the change log is served as Server-Sent Events. */
export const CHANGE_STREAM_PATH = "/v1/changes/stream";

/** The largest log index: indexes are int64 on every other protocol. */
const MAX_INDEX = 2n ** 63n - 1n;

export interface ChangeStreamOptions {
  readonly feed: ChangeLogService;
  /** Ends every open stream: the server is shutting down. */
  readonly shutdownSignal: AbortSignal;
  /** How often a comment line is sent on an idle stream, so proxies and clients keep it open. */
  readonly keepAliveMs: number;
  /** The caps on open streams, shared with WatchChanges. */
  readonly admission: StreamAdmission;
  readonly resolveClientAddress: ClientAddressResolver;
  /** Counts the stream's opening against the caller's read limit; false when it answered 429. */
  readonly limitOpen?: ExchangeLimit;
  /** How long an event may wait for the client to read it before the stream is ended. */
  readonly stallTimeoutMs: number;
  readonly log: (error: unknown) => void;
}

/**
 * GET /v1/changes/stream: WatchChanges as Server-Sent Events, for browsers' EventSource and plain
 * HTTP clients. Each event is `id: <index>`, `event: change`, `data: <the Change as JSON>`. A
 * client that reconnects sends `Last-Event-ID` (EventSource does so itself) and resumes after that
 * index; `?after=N` starts after N. Writes wait for the socket to drain, and a client that leaves
 * an event unread for the stall timeout is cut off, so a reader that stopped holds little for long.
 */
export function createChangeStream(options: ChangeStreamOptions): (exchange: HttpExchange) => Promise<void> {
  // The same record reaches every stream at the head of the log as one object: encoded once, and
  // its bytes shared by every write.
  const events = new WeakMap<LoggedChange, SseEventBytes>();
  const eventOf = (change: LoggedChange): SseEventBytes => {
    let event = events.get(change);
    if (event === undefined) {
      event = sseEventBytes(`id: ${change.index}\nevent: change\ndata: ${changeJson(changeMessage(change))}\n\n`);
      events.set(change, event);
    }
    return event;
  };

  return async (exchange) => {
    const observation = exchange.observation;
    observation.protocol = "sse";
    observation.method = "registry.v1.ChangeFeedService/WatchChanges";
    observation.route = `GET ${CHANGE_STREAM_PATH}`;
    const refuse = (error: unknown) =>
      writeRestError(exchange, toConnectError(error, options.log), undefined, {}, negotiateEncoding(exchange.header("accept-encoding")));
    let after: bigint | undefined;
    try {
      after = resumePoint(exchange);
    } catch (error) {
      await refuse(error);
      return;
    }
    if (options.limitOpen !== undefined && !(await options.limitOpen(exchange))) return;
    let release: () => void;
    try {
      release = options.admission.open(options.resolveClientAddress(exchange));
    } catch (error) {
      await refuse(error);
      return;
    }
    try {
      await stream(exchange, after);
    } finally {
      release();
    }
  };

  async function stream(exchange: HttpExchange, after: bigint | undefined): Promise<void> {
    const observation = exchange.observation;
    const { req, res } = exchange.nodeObjects();
    // HTTP/1.1's and HTTP/2's responses write alike; their overloads differ only in callbacks.
    const write = (text: string): boolean => (res as { write(chunk: string): boolean }).write(text);
    const stop = new AbortController();
    const end = () => stop.abort();
    res.once("close", end);
    options.shutdownSignal.addEventListener("abort", end, { once: true });
    res.writeHead(200, {
      "content-type": "text/event-stream; charset=utf-8",
      "cache-control": "no-store",
      // Proxies that buffer answers (nginx) would hold events back.
      "x-accel-buffering": "no",
    });
    write(": changes\n\n");
    const keepAlive = setInterval(() => write(": keep-alive\n\n"), options.keepAliveMs);
    keepAlive.unref();
    // After the first write: the headers are out.
    const events = sseEventWriter(res);
    const sink = responseSink(events, eventOf, after, stop.signal, options.stallTimeoutMs);
    try {
      await options.feed.followChanges(sink, stop.signal);
      observation.code = sink.stalled ? codeName(Code.DeadlineExceeded) : "ok";
    } catch (error) {
      // The answer has started: a failure can only end the stream, which the client resumes.
      const code = toConnectError(error, options.log).code;
      observation.code = stop.signal.aborted && code === Code.Canceled ? "canceled" : codeName(code);
    } finally {
      clearInterval(keepAlive);
      options.shutdownSignal.removeEventListener("abort", end);
      // A client that does not read cannot be sent the end either.
      if (sink.stalled) endNodeExchange(req);
      else res.end();
    }
  }
}

/**
 * The response as a sink of changes: each change written as its event; once a write finds the
 * client's buffers full, it takes nothing more until they drain, and a client that leaves them
 * full for `stallTimeoutMs` has stalled.
 */
function responseSink(
  events: SseEventWriter,
  eventOf: (change: LoggedChange) => SseEventBytes,
  after: bigint | undefined,
  signal: AbortSignal,
  stallTimeoutMs: number,
): ChangeSink & { readonly stalled: boolean } {
  let last = after ?? -1n;
  /** Set while the client's buffers are full: whether they drained, or it stalled. */
  let drain: Promise<boolean> | undefined;
  let stalled = false;
  /** Writes `changes` until one finds the client's buffers full; whether all found room. */
  const take = (changes: readonly LoggedChange[]): boolean => {
    for (const change of changes) {
      last = change.index;
      if (events.write(eventOf(change))) continue;
      // The event is taken, buffered. Listened for now: the socket may drain within this tick,
      // before whoever offered gets to wait.
      drain = drained(events.drains, signal, stallTimeoutMs);
      return false;
    }
    return true;
  };
  return {
    get last() {
      return last;
    },
    get stalled() {
      return stalled;
    },
    offer(changes) {
      if (drain !== undefined || signal.aborted) return false;
      return changes.length <= 1 ? take(changes) : events.together(() => take(changes));
    },
    async ready() {
      if (drain !== undefined) {
        stalled = !(await drain);
        drain = undefined;
      }
      return !stalled && !signal.aborted;
    },
  };
}

/** Whether `res` drained before `timeoutMs` (or the stream stopped); false when its client stalled. */
async function drained(res: NodeJS.EventEmitter, signal: AbortSignal, timeoutMs: number): Promise<boolean> {
  const timeout = new AbortController();
  const timer = setTimeout(() => timeout.abort(), timeoutMs);
  timer.unref();
  try {
    await Promise.race([once(res, "drain", { signal: timeout.signal }), once(signal, "abort", { signal: timeout.signal })]);
    return true;
  } catch {
    return signal.aborted;
  } finally {
    clearTimeout(timer);
    timeout.abort();
  }
}

/** After which index to start: Last-Event-ID (a reconnecting EventSource), else ?after=, else from the start. */
function resumePoint(exchange: HttpExchange): bigint | undefined {
  const lastEventId = exchange.header("last-event-id");
  if (lastEventId !== undefined && lastEventId !== "") return indexOf(lastEventId, "Last-Event-ID");
  const after = new URLSearchParams(exchange.query).get("after");
  return after === null || after === "" ? undefined : indexOf(after, "after");
}

function indexOf(text: string, field: string): bigint {
  const index = /^[0-9]{1,19}$/.test(text) ? BigInt(text) : undefined;
  if (index === undefined || index > MAX_INDEX)
    throw InvalidArgumentError.of(field, `must be a log index: an integer from 0 to ${MAX_INDEX}`);
  return index;
}
