import { once } from "node:events";
import { Code } from "@connectrpc/connect";
import type { ChangeLogService } from "../changes/change-log-service.js";
import { InvalidArgumentError } from "../errors.js";
import { changeMessage } from "./change-feed-handlers.js";
import { changeJson } from "./change-json.js";
import { negotiateEncoding } from "./compression.js";
import type { HttpExchange } from "./http-exchange.js";
import { writeRestError } from "./rest-transcoder.js";
import { errorOf } from "./rpc/rpc-answers.js";

/** Where the change log is served as Server-Sent Events. */
export const CHANGE_STREAM_PATH = "/v1/changes/stream";

export interface ChangeStreamOptions {
  readonly feed: ChangeLogService;
  /** Ends every open stream: the server is shutting down. */
  readonly shutdownSignal: AbortSignal;
  /** How often a comment line is sent on an idle stream, so proxies and clients keep it open. */
  readonly keepAliveMs: number;
  readonly log: (error: unknown) => void;
}

/**
 * GET /v1/changes/stream: WatchChanges as Server-Sent Events, for browsers' EventSource and plain
 * HTTP clients. Each event is `id: <index>`, `event: change`, `data: <the Change as JSON>`. A
 * client that reconnects sends `Last-Event-ID` (EventSource does so itself) and resumes after that
 * index; `?after=N` starts after N. Writes wait for the socket to drain, so a slow reader holds
 * one batch of the log in memory, not the log.
 */
export function createChangeStream(options: ChangeStreamOptions): (exchange: HttpExchange) => Promise<void> {
  return async (exchange) => {
    const observation = exchange.observation;
    observation.protocol = "sse";
    observation.method = "registry.v1.ChangeFeedService/WatchChanges";
    observation.route = `GET ${CHANGE_STREAM_PATH}`;
    let after: bigint | undefined;
    try {
      after = resumePoint(exchange);
    } catch (error) {
      await writeRestError(exchange, errorOf(error, options.log), undefined, {}, negotiateEncoding(exchange.header("accept-encoding")));
      return;
    }
    const { res } = exchange.nodeObjects();
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
    try {
      for await (const change of options.feed.watchChanges(after, stop.signal)) {
        const event = `id: ${change.index}\nevent: change\ndata: ${changeJson(changeMessage(change))}\n\n`;
        if (!write(event) && !stop.signal.aborted) await Promise.race([once(res, "drain"), once(stop.signal, "abort")]);
      }
      observation.code = "ok";
    } catch (error) {
      // The answer has started: a failure can only end the stream, which the client resumes.
      observation.code = errorOf(error, options.log).code === Code.Canceled ? "canceled" : "internal";
    } finally {
      clearInterval(keepAlive);
      options.shutdownSignal.removeEventListener("abort", end);
      res.end();
    }
  };
}

/** After which index to start: Last-Event-ID (a reconnecting EventSource), else ?after=, else from the start. */
function resumePoint(exchange: HttpExchange): bigint | undefined {
  const lastEventId = exchange.header("last-event-id");
  if (lastEventId !== undefined && lastEventId !== "") return indexOf(lastEventId, "Last-Event-ID");
  const after = new URLSearchParams(exchange.query).get("after");
  return after === null || after === "" ? undefined : indexOf(after, "after");
}

function indexOf(text: string, field: string): bigint {
  if (!/^[0-9]{1,19}$/.test(text)) throw InvalidArgumentError.of(field, "must be a log index: a non-negative integer");
  return BigInt(text);
}

