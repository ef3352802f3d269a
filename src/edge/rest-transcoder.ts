import type { connectNodeAdapter } from "@connectrpc/connect-node";
import {
  fromBinary,
  getOption,
  hasOption,
  ScalarType,
  toJson,
  type DescField,
  type DescMessage,
  type JsonObject,
  type JsonValue,
  type Registry,
} from "@bufbuild/protobuf";
import type { UniversalHandler, UniversalServerRequest } from "@connectrpc/connect/protocol";
import { http } from "../../gen/google/api/annotations_pb.js";
import type { HttpRule } from "../../gen/google/api/http_pb.js";
import { rest_success_status } from "../../gen/registry/v1/rest_options_pb.js";
import { matchPathTemplate, parsePathTemplate, type PathTemplate } from "./path-template.js";

type NodeHandler = ReturnType<typeof connectNodeAdapter>;
type NodeRequest = Parameters<NodeHandler>[0];
type NodeResponse = Parameters<NodeHandler>[1];

/** The part of a Node response (HTTP/1 or HTTP/2) that a JSON answer needs. */
export interface JsonResponseTarget {
  writeHead(status: number, headers: Record<string, string>): unknown;
  end(body: Uint8Array): unknown;
}

/** One REST route, derived from an RPC's google.api.http annotation. */
export interface RestRoute {
  readonly httpMethod: string;
  readonly template: PathTemplate;
  /** "" (no body), "*" (the whole request) or the name of the request field the body fills. */
  readonly body: string;
  /** The response field returned as the body, or "" for the whole response. */
  readonly responseBody: string;
  readonly successStatus: number;
  readonly handler: UniversalHandler;
}

export interface RestTranscoderOptions {
  /** The Connect handlers of every served RPC; those with a google.api.http rule get a route. */
  readonly handlers: readonly UniversalHandler[];
  /** Resolves error detail types so they are rendered as JSON rather than base64. */
  readonly registry: Registry;
  readonly maxBodyBytes: number;
}

/** Headers that describe the REST exchange itself and must not reach the Connect handler. */
const HOP_HEADERS = new Set([
  "host", "connection", "keep-alive", "transfer-encoding", "te", "upgrade", "content-length",
  "content-type", "content-encoding", "accept-encoding", "connect-protocol-version",
  "connect-timeout-ms", "connect-content-encoding", "connect-accept-encoding", "http2-settings",
]);

export class RestRequestError extends Error {
  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
    readonly headers: Record<string, string> = {},
  ) {
    super(message);
  }
}

export function routesFromHandlers(handlers: readonly UniversalHandler[]): RestRoute[] {
  const routes: RestRoute[] = [];
  const seen = new Set<string>();
  for (const handler of handlers) {
    // The router holds one handler per RPC; several protocol handlers can share a method.
    if (seen.has(handler.requestPath) || !hasOption(handler.method, http)) continue;
    seen.add(handler.requestPath);
    const successStatus = hasOption(handler.method, rest_success_status)
      ? getOption(handler.method, rest_success_status)
      : 200;
    const rule = getOption(handler.method, http);
    for (const binding of [rule, ...rule.additionalBindings]) {
      const pattern = patternOf(binding);
      if (pattern === undefined) continue;
      routes.push({
        httpMethod: pattern.method,
        template: parsePathTemplate(pattern.path),
        body: binding.body,
        responseBody: binding.responseBody || rule.responseBody,
        successStatus,
        handler,
      });
    }
  }
  return routes;
}

function patternOf(rule: HttpRule): { method: string; path: string } | undefined {
  const { pattern } = rule;
  switch (pattern.case) {
    case undefined:
      return undefined;
    case "custom":
      return { method: pattern.value.kind.toUpperCase(), path: pattern.value.path };
    default:
      return { method: pattern.case.toUpperCase(), path: pattern.value };
  }
}

/**
 * Serves REST/JSON routes by translating each request into a Connect unary call on the RPC's own
 * handler, so interceptors, validation and error mapping are exactly those of the other protocols.
 */
export function createRestTranscoder(options: RestTranscoderOptions) {
  const routes = routesFromHandlers(options.handlers);

  async function handle(req: NodeRequest, res: NodeResponse): Promise<void> {
    try {
      const url = new URL(req.url ?? "/", "http://localhost");
      const { route, pathValues } = findRoute(req.method ?? "GET", url.pathname);
      const body = route.body === "" ? undefined : await readJsonBody(req, options.maxBodyBytes);
      const message = requestJson(route, pathValues, body, url.searchParams);
      await invoke(route, message, req, res);
    } catch (error) {
      if (!(error instanceof RestRequestError)) throw error;
      writeJson(res, error.status, { code: error.code, message: error.message, details: [] }, error.headers);
    }
  }

  function findRoute(method: string, path: string): { route: RestRoute; pathValues: Map<string, string> } {
    const allowed = new Set<string>();
    for (const route of routes) {
      const pathValues = matchPathTemplate(route.template, path);
      if (pathValues === undefined) continue;
      if (route.httpMethod === method || (method === "HEAD" && route.httpMethod === "GET")) {
        return { route, pathValues };
      }
      allowed.add(route.httpMethod);
    }
    if (allowed.size > 0) {
      throw new RestRequestError(405, "unimplemented", `method ${method} is not allowed on ${path}`, {
        allow: [...allowed].join(", "),
      });
    }
    throw new RestRequestError(404, "not_found", `no route for ${method} ${path}`);
  }

  async function invoke(route: RestRoute, message: JsonObject, req: NodeRequest, res: NodeResponse) {
    const abort = new AbortController();
    // Only a client that left before the answer was written cancels the call; aborting on every
    // close would build an AbortError (with its stack) per request for nothing.
    res.once("close", () => {
      if (!res.writableFinished) abort.abort();
    });
    const request: UniversalServerRequest = {
      httpVersion: req.httpVersion,
      method: "POST",
      url: `http://localhost${route.handler.requestPath}`,
      header: forwardedHeaders(req),
      body: message,
      signal: abort.signal,
    };
    const response = await route.handler(request);
    const bytes = await collect(response.body);
    const headers: Record<string, string> = {};
    response.header?.forEach((value, key) => {
      if (!HOP_HEADERS.has(key)) headers[key] = value;
    });
    if (response.status !== 200) {
      writeJson(res, response.status, restError(bytes, options.registry), headers);
      return;
    }
    let payload = bytes;
    if (route.responseBody !== "") {
      const whole = JSON.parse(new TextDecoder().decode(bytes)) as JsonObject;
      const jsonName = jsonNameOf(route.handler.method.output, route.responseBody);
      payload = new TextEncoder().encode(JSON.stringify(whole[jsonName] ?? {}));
    }
    res.writeHead(route.successStatus, {
      ...headers,
      "content-type": "application/json",
      "content-length": String(payload.length),
    });
    res.end(payload);
  }

  return { handle, routes };
}

function forwardedHeaders(req: NodeRequest): Headers {
  const header = new Headers();
  for (const [key, value] of Object.entries(req.headers)) {
    if (key.startsWith(":") || HOP_HEADERS.has(key) || value === undefined) continue;
    header.set(key, Array.isArray(value) ? value.join(", ") : value);
  }
  header.set("content-type", "application/json");
  header.set("connect-protocol-version", "1");
  return header;
}

async function readJsonBody(req: NodeRequest, maxBytes: number): Promise<JsonValue | undefined> {
  const declared = Number(req.headers["content-length"] ?? 0);
  if (declared > maxBytes) throw tooLarge(maxBytes);
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of req as AsyncIterable<Buffer>) {
    size += chunk.length;
    if (size > maxBytes) throw tooLarge(maxBytes);
    chunks.push(chunk);
  }
  if (size === 0) return undefined;
  try {
    return JSON.parse(Buffer.concat(chunks).toString("utf8")) as JsonValue;
  } catch {
    throw new RestRequestError(400, "invalid_argument", "body: is not valid JSON");
  }
}

function tooLarge(maxBytes: number): RestRequestError {
  return new RestRequestError(413, "resource_exhausted", `body: must be at most ${maxBytes} bytes`);
}

/**
 * Builds the request message's JSON from the body, the path variables and the query string, the
 * way google.api.http defines it: path variables win, the query fills what the body does not.
 */
function requestJson(
  route: RestRoute,
  pathValues: Map<string, string>,
  body: JsonValue | undefined,
  query: URLSearchParams,
): JsonObject {
  const input = route.handler.method.input;
  let message: JsonObject = {};
  if (route.body === "*") {
    if (body !== undefined && (typeof body !== "object" || body === null || Array.isArray(body))) {
      throw new RestRequestError(400, "invalid_argument", "body: must be a JSON object");
    }
    message = { ...(body ?? {}) };
  } else if (route.body !== "" && body !== undefined) {
    message[jsonNameOf(input, route.body)] = body;
  }
  for (const [fieldPath, value] of pathValues) setField(message, input, fieldPath, value);
  if (route.body !== "*") {
    for (const key of new Set(query.keys())) {
      const field = findField(input, key);
      if (field === undefined) {
        throw new RestRequestError(400, "invalid_argument", `${key}: is not a query parameter of this route`);
      }
      const values = query.getAll(key).map((value) => queryValue(field, value));
      message[field.jsonName] = field.fieldKind === "list" ? values : (values.at(-1) as JsonValue);
    }
  }
  return message;
}

function setField(message: JsonObject, input: DescMessage, fieldPath: string, value: string) {
  const names = fieldPath.split(".");
  let target = message;
  let descriptor: DescMessage | undefined = input;
  for (const [index, name] of names.entries()) {
    const field: DescField | undefined = descriptor?.fields.find((f) => f.name === name);
    const key = field?.jsonName ?? name;
    if (index === names.length - 1) {
      target[key] = value;
      return;
    }
    const next = target[key];
    target = typeof next === "object" && next !== null && !Array.isArray(next) ? next : (target[key] = {});
    descriptor = field?.message;
  }
}

function findField(input: DescMessage, key: string): DescField | undefined {
  return input.fields.find((field) => field.name === key || field.jsonName === key);
}

function queryValue(field: DescField, value: string): JsonValue {
  if (field.scalar === ScalarType.BOOL) return value === "true" ? true : value === "false" ? false : value;
  return value;
}

function jsonNameOf(message: DescMessage, fieldName: string): string {
  return message.fields.find((field) => field.name === fieldName)?.jsonName ?? fieldName;
}

async function collect(body: AsyncIterable<Uint8Array> | undefined): Promise<Uint8Array> {
  if (body === undefined) return new Uint8Array(0);
  const chunks: Uint8Array[] = [];
  for await (const chunk of body) chunks.push(chunk);
  return chunks.length === 1 ? (chunks[0] as Uint8Array) : Buffer.concat(chunks);
}

/**
 * Rewrites a Connect error body for REST clients: details are decoded into JSON objects with an
 * "@type" (the google.protobuf.Any JSON form) instead of Connect's base64 wire form.
 */
function restError(bytes: Uint8Array, registry: Registry): JsonObject {
  let parsed: { code?: string; message?: string; details?: { type?: string; value?: string }[] };
  try {
    parsed = JSON.parse(new TextDecoder().decode(bytes));
  } catch {
    return { code: "unknown", message: "the server answered with an unreadable error", details: [] };
  }
  const details = (parsed.details ?? []).map((detail): JsonValue => {
    const schema = detail.type === undefined ? undefined : registry.getMessage(detail.type);
    if (schema === undefined || detail.value === undefined) return { "@type": detail.type ?? "" };
    const message = fromBinary(schema, Buffer.from(detail.value, "base64"));
    return { "@type": `type.googleapis.com/${detail.type}`, ...(toJson(schema, message, { registry }) as JsonObject) };
  });
  return { code: parsed.code ?? "unknown", message: parsed.message ?? "", details };
}

function writeJson(res: JsonResponseTarget, status: number, body: JsonValue, headers: Record<string, string> = {}) {
  const bytes = Buffer.from(JSON.stringify(body));
  res.writeHead(status, { ...headers, "content-type": "application/json", "content-length": String(bytes.length) });
  res.end(bytes);
}

export { writeJson };
