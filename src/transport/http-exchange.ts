import type { IncomingHttpHeaders, IncomingMessage, ServerResponse } from "node:http";
import http2, { type Http2ServerRequest, type Http2ServerResponse, type ServerHttp2Stream } from "node:http2";
import { CallObservation } from "./call-observation.js";
import { sendAtTurnEnd, type PendingAnswer } from "./turn-end-writes.js";

/** Response headers by lower-case name. */
export type ResponseHeaders = Record<string, string | number | readonly string[]>;

export type NodeRequest = IncomingMessage | Http2ServerRequest;
export type NodeResponse = ServerResponse | Http2ServerResponse;

/**
 * One HTTP request and its answer, the same whether it came over HTTP/1.1 (node:http) or as an
 * HTTP/2 stream (node:http2's stream API). Every protocol the edge speaks is written once against
 * this, so reading bodies, limits, cancellation and the one place answers leave are shared.
 * HTTP/2 streams are served without node's compatibility layer: building its request and response
 * objects costs a quarter of a small call, so they are made only for the Connect adapter.
 */
export interface HttpExchange {
  readonly httpVersion: 1 | 2;
  readonly method: string;
  /** The path, without the query. */
  readonly path: string;
  /** The query string without "?"; "" when there is none. */
  readonly query: string;
  readonly headers: IncomingHttpHeaders;
  readonly remoteAddress: string | undefined;
  /** One request header (lower-case name); repeated ones joined with ", ". */
  header(name: string): string | undefined;
  /** Adds a header to whatever answer this exchange gives (CORS, nosniff). */
  setHeader(name: string, value: string): void;
  /**
   * The whole request body, at most `maxBytes`. Over the limit it rejects with BodyTooLargeError,
   * and the answer that follows also ends the connection (HTTP/1) or the stream (HTTP/2) unless the
   * rest of the body can be read and dropped cheaply, so a keep-alive connection never stalls on
   * unread bytes.
   */
  readBody(maxBytes: number): Promise<Buffer>;
  /**
   * Gives the whole answer; trailers (gRPC) go in HTTP/2 trailers, or after a chunked HTTP/1.1
   * body. The exchange is answered at once (`done`); the bytes leave at the end of this turn of the
   * event loop, with the turn's other answers (see turn-end-writes.ts). The headers object is the
   * exchange's from then on.
   */
  respond(status: number, headers: ResponseHeaders, body?: Uint8Array, trailers?: ResponseHeaders): void;
  /** True once an answer was sent or the client went away: nothing more can be written. */
  readonly done: boolean;
  /** Runs `listener` if the client goes away before the answer is sent. */
  onClientGone(listener: () => void): void;
  /** Node's request and response objects, for the Connect adapter (HTTP/2: made on first use). */
  nodeObjects(): { req: NodeRequest; res: NodeResponse };
  /** What the access log and the metrics record of this call; protocol code fills it in. */
  readonly observation: CallObservation;
}

/** Told once per exchange when it is over. */
export interface ExchangeObserver {
  /** The answer left with `status`, or (undefined) the client went away before one was sent. */
  finished(exchange: HttpExchange, status: number | undefined): void;
}

/** What every exchange of a server reports to. */
export interface ExchangeHooks {
  /** Hears of each exchange's end: the answer sent, or the client gone. */
  readonly observer?: ExchangeObserver;
  /**
   * An answer node refused to write (a header value it rejects: a bug, never the client's doing).
   * The connection or stream is reset, so the client sees a failure rather than waiting.
   */
  readonly onWriteError?: (error: unknown) => void;
}

/** An answer decided and waiting for the end of the turn. */
interface DecidedAnswer {
  readonly status: number;
  readonly headers: ResponseHeaders;
  readonly body: Uint8Array | undefined;
  readonly trailers: ResponseHeaders | undefined;
}

export class BodyTooLargeError extends Error {
  constructor(readonly maxBytes: number) {
    super(`must be at most ${maxBytes} bytes`);
  }
}

/**
 * A body declared (or found) this many times over the limit is not read to its end: the answer
 * closes the connection instead. Below it, dropping the rest keeps a keep-alive connection usable.
 */
const DRAIN_FACTOR = 4;

function splitTarget(target: string): { path: string; query: string } {
  const mark = target.indexOf("?");
  return mark === -1 ? { path: target, query: "" } : { path: target.slice(0, mark), query: target.slice(mark + 1) };
}

function headerValue(headers: IncomingHttpHeaders, name: string): string | undefined {
  const value = headers[name];
  return Array.isArray(value) ? value.join(", ") : value;
}

/**
 * node's HTTP/1 writer sends a Buffer body in one writev with the headers, but a plain Uint8Array
 * (protobuf-es's output) in separate writes: wrapping it (no copy) halves the syscalls.
 */
function asBuffer(body: Uint8Array): Buffer {
  return Buffer.isBuffer(body) ? body : Buffer.from(body.buffer, body.byteOffset, body.byteLength);
}

/**
 * The answer's headers with those set on the exchange beforehand added (Vary lists both). The
 * answer's own object is completed in place: callers build it for this one answer.
 */
function withPreset(preset: Record<string, string>, headers: ResponseHeaders): ResponseHeaders {
  for (const name in preset) {
    const value = preset[name] as string;
    const own = headers[name];
    if (own === undefined) headers[name] = value;
    else if (name === "vary") headers.vary = `${value}, ${String(own)}`;
  }
  return headers;
}

function declaredLength(headers: IncomingHttpHeaders): number | undefined {
  const value = headers["content-length"];
  return value === undefined ? undefined : Number(value);
}

/**
 * Reads a body from a readable stream up to `maxBytes`. On overflow it stops collecting and tells
 * the caller through `onOverflow`, which decides whether the rest is dropped or the transport cut.
 */
function readLimited(
  source: Pick<NodeJS.EventEmitter, "on" | "once" | "removeListener">,
  headers: IncomingHttpHeaders,
  maxBytes: number,
  onOverflow: (hopeless: boolean) => void,
): Promise<Buffer> {
  const declared = declaredLength(headers);
  if (declared !== undefined && declared > maxBytes) {
    onOverflow(declared > maxBytes * DRAIN_FACTOR);
    return Promise.reject(new BodyTooLargeError(maxBytes));
  }
  return new Promise<Buffer>((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    let overflowed = false;
    const onData = (chunk: Buffer) => {
      size += chunk.length;
      if (overflowed) {
        if (size > maxBytes * DRAIN_FACTOR) {
          source.removeListener("data", onData);
          onOverflow(true);
        }
        return;
      }
      if (size > maxBytes) {
        overflowed = true;
        chunks.length = 0;
        onOverflow(false);
        reject(new BodyTooLargeError(maxBytes));
        return;
      }
      chunks.push(chunk);
    };
    // Once the body is whole (or failed), nothing of the exchange stays attached to the request: an
    // HTTP/2 stream outlives its call inside node until an old-generation collection, and listeners
    // left on it would keep this call's objects alive, and copied, through every young collection.
    const onEnd = () => {
      source.removeListener("data", onData);
      source.removeListener("error", onError);
      if (!overflowed) resolve(chunks.length === 1 ? (chunks[0] as Buffer) : Buffer.concat(chunks, size));
    };
    const onError = (error: Error) => {
      source.removeListener("data", onData);
      source.removeListener("end", onEnd);
      if (!overflowed) reject(error);
    };
    source.on("data", onData);
    source.once("end", onEnd);
    source.once("error", onError);
  });
}

/**
 * An HTTP/1.1 request (or an HTTP/2 one through the compatibility layer). Exchanges are classes
 * rather than object literals of closures: one is made per request, on the hot path, and methods
 * on a prototype cost no allocation.
 */
class NodeExchange implements HttpExchange, PendingAnswer {
  readonly httpVersion: 1 | 2;
  readonly method: string;
  readonly path: string;
  readonly query: string;
  readonly headers: IncomingHttpHeaders;
  readonly observation = new CallObservation();
  #preset: Record<string, string> = {};
  #answered = false;
  #answer: DecidedAnswer | undefined;
  #sent = false;
  #closeConnection = false;
  #handedOver = false;
  #hooks: ExchangeHooks;
  #gone: (() => void)[] = [];

  constructor(
    readonly req: NodeRequest,
    readonly res: NodeResponse,
    hooks: ExchangeHooks,
  ) {
    const target = splitTarget(req.url ?? "/");
    this.httpVersion = req.httpVersionMajor === 2 ? 2 : 1;
    this.method = req.method ?? "GET";
    this.path = target.path;
    this.query = target.query;
    this.headers = req.headers;
    this.#hooks = hooks;
    // "close" comes once, after the answer or when the client left: no once() wrapper needed. One
    // listener serves the observer and every onClientGone.
    res.on("close", () => this.#closed());
  }

  /** The exchange is over: tell the observer, unless respond() already did, and those waiting for a client that left. */
  #closed(): void {
    if (this.#answered) return;
    if (this.#hooks.observer !== undefined) this.#observeEnd();
    for (const listener of this.#gone) listener();
  }

  #observeEnd(): void {
    const { res } = this;
    // Answered whole through the node objects (Connect's adapter), or cut short: the client left.
    if (!(this.#handedOver && res.writableEnded)) this.observation.code ??= "canceled";
    this.#hooks.observer?.finished(this, this.#handedOver && res.headersSent ? res.statusCode : undefined);
  }

  get remoteAddress(): string | undefined {
    return this.req.socket?.remoteAddress;
  }

  header(name: string): string | undefined {
    return headerValue(this.headers, name);
  }

  setHeader(name: string, value: string): void {
    this.#preset[name] = value;
  }

  readBody(maxBytes: number): Promise<Buffer> {
    return readLimited(this.req, this.headers, maxBytes, (hopeless) => {
      if (!hopeless) return; // node drops the rest of the body once the answer is sent (IncomingMessage._dump)
      this.#closeConnection = true;
      // Nothing more will be read from this connection. An answer not yet written will say
      // "Connection: close" (decided at the end of the turn); one already written did not, so the
      // connection is cut.
      if (this.#sent) this.req.socket?.destroy();
    });
  }

  respond(status: number, headers: ResponseHeaders, body?: Uint8Array, trailers?: ResponseHeaders): void {
    const { res } = this;
    if (this.#answered || res.writableEnded || res.destroyed) return;
    this.#answered = true;
    this.#answer = { status, headers: withPreset(this.#preset, headers), body, trailers };
    sendAtTurnEnd(this);
  }

  send(): void {
    const { req, res } = this;
    const answer = this.#answer as DecidedAnswer;
    this.#answer = undefined;
    this.#sent = true;
    if (res.destroyed) {
      answerLost(this, this.#hooks.observer);
      return;
    }
    try {
      writeNodeAnswer(req, res, answer, this.#closeConnection);
    } catch (error) {
      res.destroy();
      this.#hooks.onWriteError?.(error);
      answerLost(this, this.#hooks.observer, "internal");
      return;
    }
    this.#hooks.observer?.finished(this, answer.status);
  }

  sendFailed(error: unknown): void {
    // An answer node has taken is left to arrive; one it has not, the client hears of at once.
    if (!this.res.headersSent) this.res.destroy();
    this.#hooks.onWriteError?.(error);
  }

  get done(): boolean {
    return this.#answered || this.res.destroyed || this.res.writableEnded;
  }

  onClientGone(listener: () => void): void {
    this.#gone.push(listener);
  }

  nodeObjects(): { req: NodeRequest; res: NodeResponse } {
    this.#handedOver = true;
    for (const [name, value] of Object.entries(this.#preset)) this.res.setHeader(name, value);
    return { req: this.req, res: this.res };
  }
}

export function exchangeFromNode(req: NodeRequest, res: NodeResponse, hooks: ExchangeHooks = {}): HttpExchange {
  return new NodeExchange(req, res, hooks);
}

function writeNodeAnswer(req: NodeRequest, res: NodeResponse, answer: DecidedAnswer, closeConnection: boolean): void {
  const { status, headers, body, trailers } = answer;
  if (closeConnection && req.httpVersionMajor === 1) headers.connection = "close";
  const hasBody = body !== undefined && body.byteLength > 0;
  if (trailers !== undefined && req.httpVersionMajor === 1) {
    // HTTP/1.1 carries trailers only after a chunked body (gRPC over HTTP/1.1): no content-length.
    headers.trailer = Object.keys(trailers).join(", ");
    res.writeHead(status, headers as Record<string, string>);
    if (hasBody) (res as ServerResponse).write(asBuffer(body));
    res.addTrailers(trailers as Record<string, string>);
    res.end();
    return;
  }
  if (hasBody) headers["content-length"] = body.byteLength;
  res.writeHead(status, headers as Record<string, string>);
  if (hasBody && req.method !== "HEAD") res.end(asBuffer(body));
  else res.end();
}

/** An answer decided but never sent: the client left first (canceled), or node refused it. */
function answerLost(exchange: HttpExchange, observer: ExchangeObserver | undefined, code = "canceled"): void {
  exchange.observation.code = code;
  observer?.finished(exchange, undefined);
}

const { NGHTTP2_NO_ERROR } = http2.constants;

/** An HTTP/2 stream, served through node's stream API. */
class StreamExchange implements HttpExchange, PendingAnswer {
  readonly httpVersion = 2;
  readonly method: string;
  readonly path: string;
  readonly query: string;
  readonly observation = new CallObservation();
  #preset: Record<string, string> = {};
  #answered = false;
  #answer: DecidedAnswer | undefined;
  #sent = false;
  #endStream = false;
  #nodeObjects: { req: NodeRequest; res: NodeResponse } | undefined;
  #hooks: ExchangeHooks;
  #gone: (() => void)[] = [];

  constructor(
    readonly stream: ServerHttp2Stream,
    readonly headers: http2.IncomingHttpHeaders,
    readonly rawHeaders: readonly string[],
    hooks: ExchangeHooks,
  ) {
    const target = splitTarget(headers[":path"] ?? "/");
    this.method = headers[":method"] ?? "GET";
    this.path = target.path;
    this.query = target.query;
    this.#hooks = hooks;
    // once(): the listener, and through it this exchange, leaves the stream when it fires (see readLimited).
    stream.once("close", () => this.#closed());
  }

  /** The exchange is over: tell the observer, unless respond() already did, and those waiting for a client that left. */
  #closed(): void {
    if (this.#answered) return;
    if (this.#hooks.observer !== undefined) this.#observeEnd();
    for (const listener of this.#gone) listener();
  }

  #observeEnd(): void {
    const res = this.#nodeObjects?.res;
    // Answered whole through the node objects (Connect's adapter), or cut short: the client left.
    if (!res?.writableEnded) this.observation.code ??= "canceled";
    this.#hooks.observer?.finished(this, res?.headersSent ? res.statusCode : undefined);
  }

  get remoteAddress(): string | undefined {
    return this.stream.session?.socket?.remoteAddress;
  }

  header(name: string): string | undefined {
    return headerValue(this.headers, name);
  }

  setHeader(name: string, value: string): void {
    this.#preset[name] = value;
  }

  readBody(maxBytes: number): Promise<Buffer> {
    return readLimited(this.stream, this.headers, maxBytes, (hopeless) => {
      // The rest of the body is not wanted: once the answer is out, RST_STREAM(NO_ERROR) tells
      // the client to stop sending (RFC 9113 §8.1) without failing the response it got.
      this.#endStream = true;
      if (hopeless && this.#sent && !this.stream.destroyed) this.stream.close(NGHTTP2_NO_ERROR);
    });
  }

  respond(status: number, headers: ResponseHeaders, body?: Uint8Array, trailers?: ResponseHeaders): void {
    const { stream } = this;
    if (this.#answered || stream.destroyed || stream.closed) return;
    this.#answered = true;
    this.#answer = { status, headers: withPreset(this.#preset, headers), body, trailers };
    sendAtTurnEnd(this);
  }

  send(): void {
    const { stream } = this;
    const answer = this.#answer as DecidedAnswer;
    this.#answer = undefined;
    this.#sent = true;
    if (stream.destroyed || stream.closed) {
      answerLost(this, this.#hooks.observer);
      return;
    }
    try {
      writeStreamAnswer(stream, answer, this.method === "HEAD", this.#endStream);
    } catch (error) {
      stream.close(http2.constants.NGHTTP2_INTERNAL_ERROR);
      this.#hooks.onWriteError?.(error);
      answerLost(this, this.#hooks.observer, "internal");
      return;
    }
    if (this.#endStream) stream.close(NGHTTP2_NO_ERROR);
    this.#hooks.observer?.finished(this, answer.status);
  }

  sendFailed(error: unknown): void {
    // An answer node has taken is left to arrive; one it has not, the client hears of at once.
    const { stream } = this;
    if (!stream.headersSent && !stream.destroyed) stream.close(http2.constants.NGHTTP2_INTERNAL_ERROR);
    this.#hooks.onWriteError?.(error);
  }

  get done(): boolean {
    return this.#answered || this.stream.destroyed || this.stream.closed;
  }

  onClientGone(listener: () => void): void {
    this.#gone.push(listener);
  }

  nodeObjects(): { req: NodeRequest; res: NodeResponse } {
    if (this.#nodeObjects === undefined) {
      const res = new http2.Http2ServerResponse(this.stream);
      for (const [name, value] of Object.entries(this.#preset)) res.setHeader(name, value);
      this.#nodeObjects = { req: new http2.Http2ServerRequest(this.stream, this.headers, {}, [...this.rawHeaders]), res };
    }
    return this.#nodeObjects;
  }
}

export function exchangeFromStream(
  stream: ServerHttp2Stream,
  headers: http2.IncomingHttpHeaders,
  rawHeaders: readonly string[],
  hooks: ExchangeHooks = {},
): HttpExchange {
  return new StreamExchange(stream, headers, rawHeaders, hooks);
}

/** Ends a stream whose body has been handed to nghttp2; a stream reset meanwhile is already over. */
function endAfterWrite(this: ServerHttp2Stream, error: Error | null | undefined): void {
  if (error == null) this.end();
}

/**
 * `closing`: the stream is reset (NO_ERROR) right after, because the request's body was not read
 * to its end; the body then goes with end(), after which node holds the reset until it is sent.
 */
function writeStreamAnswer(stream: ServerHttp2Stream, answer: DecidedAnswer, head: boolean, closing: boolean): void {
  const { status, body, trailers } = answer;
  const headers = answer.headers as http2.OutgoingHttpHeaders;
  headers[":status"] = status;
  const hasBody = body !== undefined && body.byteLength > 0;
  // An answer with trailers (gRPC) has no length: grpc-go and grpc-java send none, and curl stops
  // reading at the length, before the trailers that carry grpc-status.
  if (hasBody && trailers === undefined) headers["content-length"] = body.byteLength;
  if (!hasBody && trailers === undefined) {
    stream.respond(headers, { endStream: true });
    return;
  }
  stream.respond(headers, { endStream: false, waitForTrailers: trailers !== undefined });
  if (trailers !== undefined) stream.once("wantTrailers", () => stream.sendTrailers(trailers as http2.OutgoingHttpHeaders));
  if (!hasBody || head) stream.end();
  else if (trailers !== undefined || closing) stream.end(body);
  // The body's own DATA frame, then END_STREAM once nghttp2 has taken it. With end(body), nghttp2
  // closes the stream while sending the body, before node runs the write's callback, and node's
  // Writable then builds an ERR_STREAM_DESTROYED error, with a whole stack trace, for every answer
  // (docs/performance.md#h2c-calls). The empty DATA frame costs 9 bytes.
  else stream.write(body, endAfterWrite.bind(stream));
}
