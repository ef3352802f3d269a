import type { IncomingHttpHeaders, IncomingMessage, ServerResponse } from "node:http";
import http2, { type Http2ServerRequest, type Http2ServerResponse, type ServerHttp2Stream } from "node:http2";

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
  /** Sends the whole answer. Trailers need HTTP/2 (gRPC); HTTP/1 answers never carry them. */
  respond(status: number, headers: ResponseHeaders, body?: Uint8Array, trailers?: ResponseHeaders): void;
  /** True once an answer was sent or the client went away: nothing more can be written. */
  readonly done: boolean;
  /** Runs `listener` if the client goes away before the answer is sent. */
  onClientGone(listener: () => void): void;
  /** Node's request and response objects, for the Connect adapter (HTTP/2: made on first use). */
  nodeObjects(): { req: NodeRequest; res: NodeResponse };
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

/** The answer's headers after those set on the exchange beforehand; Vary lists both. */
function withPreset(preset: Record<string, string>, headers: ResponseHeaders): ResponseHeaders {
  const all: ResponseHeaders = { ...preset, ...headers };
  if (preset.vary !== undefined && headers.vary !== undefined) all.vary = `${preset.vary}, ${String(headers.vary)}`;
  return all;
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
  source: { on(event: string, listener: (...args: any[]) => void): unknown; removeListener(event: string, listener: (...args: any[]) => void): unknown },
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
    source.on("data", onData);
    source.on("end", () => {
      if (!overflowed) resolve(chunks.length === 1 ? (chunks[0] as Buffer) : Buffer.concat(chunks, size));
    });
    source.on("error", (error: Error) => {
      if (!overflowed) reject(error);
    });
  });
}

/** An HTTP/1.1 request (or an HTTP/2 one through the compatibility layer). */
export function exchangeFromNode(req: NodeRequest, res: NodeResponse): HttpExchange {
  const { path, query } = splitTarget(req.url ?? "/");
  const preset: Record<string, string> = {};
  let answered = false;
  let closeConnection = false;
  return {
    httpVersion: req.httpVersionMajor === 2 ? 2 : 1,
    method: req.method ?? "GET",
    path,
    query,
    headers: req.headers,
    remoteAddress: req.socket?.remoteAddress,
    header: (name) => headerValue(req.headers, name),
    setHeader(name, value) {
      preset[name] = value;
    },
    readBody(maxBytes) {
      return readLimited(req, req.headers, maxBytes, (hopeless) => {
        if (hopeless) {
          closeConnection = true;
          // Already answered: nothing more will be read from this connection.
          if (answered) req.socket?.destroy();
        }
        // Otherwise node drops the rest of the body once the answer is sent (IncomingMessage._dump).
      });
    },
    respond(status, headers, body, trailers) {
      if (answered || res.writableEnded || res.destroyed) return;
      answered = true;
      void trailers;
      const all = withPreset(preset, headers);
      if (closeConnection && req.httpVersionMajor === 1) all.connection = "close";
      if (body !== undefined && body.byteLength > 0) {
        all["content-length"] = body.byteLength;
        res.writeHead(status, all as Record<string, string>);
        if (req.method === "HEAD") res.end();
        else res.end(asBuffer(body));
      } else {
        res.writeHead(status, all as Record<string, string>);
        res.end();
      }
    },
    get done() {
      return answered || res.destroyed || res.writableEnded;
    },
    onClientGone(listener) {
      res.once("close", () => {
        if (!answered) listener();
      });
    },
    nodeObjects() {
      for (const [name, value] of Object.entries(preset)) res.setHeader(name, value);
      return { req, res };
    },
  };
}

const { NGHTTP2_NO_ERROR } = http2.constants;

/** An HTTP/2 stream, served through node's stream API. */
export function exchangeFromStream(
  stream: ServerHttp2Stream,
  headers: http2.IncomingHttpHeaders,
  rawHeaders: readonly string[],
): HttpExchange {
  const { path, query } = splitTarget(headers[":path"] ?? "/");
  const method = headers[":method"] ?? "GET";
  const preset: Record<string, string> = {};
  let answered = false;
  let endStream = false;
  let nodeObjects: { req: NodeRequest; res: NodeResponse } | undefined;
  return {
    httpVersion: 2,
    method,
    path,
    query,
    headers,
    get remoteAddress() {
      return stream.session?.socket?.remoteAddress;
    },
    header: (name) => headerValue(headers, name),
    setHeader(name, value) {
      preset[name] = value;
    },
    readBody(maxBytes) {
      return readLimited(stream, headers, maxBytes, (hopeless) => {
        // The rest of the body is not wanted: once the answer is out, RST_STREAM(NO_ERROR) tells
        // the client to stop sending (RFC 9113 §8.1) without failing the response it got.
        endStream = true;
        if (hopeless && answered && !stream.destroyed) stream.close(NGHTTP2_NO_ERROR);
      });
    },
    respond(status, responseHeaders, body, trailers) {
      if (answered || stream.destroyed || stream.closed) return;
      answered = true;
      const all = withPreset(preset, responseHeaders) as http2.OutgoingHttpHeaders;
      all[":status"] = status;
      const hasBody = body !== undefined && body.byteLength > 0;
      if (hasBody) all["content-length"] = body.byteLength;
      if (!hasBody && trailers === undefined) {
        stream.respond(all, { endStream: true });
      } else {
        stream.respond(all, { endStream: false, waitForTrailers: trailers !== undefined });
        if (trailers !== undefined) {
          stream.once("wantTrailers", () => stream.sendTrailers(trailers as http2.OutgoingHttpHeaders));
        }
        stream.end(hasBody && method !== "HEAD" ? body : undefined);
      }
      if (endStream) stream.close(NGHTTP2_NO_ERROR);
    },
    get done() {
      return answered || stream.destroyed || stream.closed;
    },
    onClientGone(listener) {
      stream.once("close", () => {
        if (!answered) listener();
      });
    },
    nodeObjects() {
      if (nodeObjects === undefined) {
        const res = new http2.Http2ServerResponse(stream);
        for (const [name, value] of Object.entries(preset)) res.setHeader(name, value);
        nodeObjects = { req: new http2.Http2ServerRequest(stream, headers, {}, [...rawHeaders]), res };
      }
      return nodeObjects;
    },
  };
}
