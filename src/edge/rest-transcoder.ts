import type { connectNodeAdapter } from "@connectrpc/connect-node";
import {
  create,
  fromBinary,
  fromJson,
  getOption,
  hasOption,
  ScalarType,
  toJson,
  toJsonString,
  type DescField,
  type DescMessage,
  type DescService,
  type JsonObject,
  type JsonValue,
  type Registry,
} from "@bufbuild/protobuf";
import {
  Code,
  ConnectError,
  createContextValues,
  createMethodImplSpec,
  type ContextValues,
  type HandlerContext,
  type Interceptor,
  type MethodImplSpec,
  type ServiceImpl,
} from "@connectrpc/connect";
import { invokeUnaryImplementation } from "@connectrpc/connect/protocol";
import { codeToHttpStatus } from "@connectrpc/connect/protocol-connect";
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

/** A served service and its implementation, as registered on the Connect router. */
export interface RestService {
  readonly service: DescService;
  /** Method implementations by local name (e.g. "resolveEntry"). */
  readonly impl: Readonly<Record<string, unknown>>;
}

/** Pairs a service with its implementation, checked against each other once, here. */
export function servedService<T extends DescService>(service: T, impl: Partial<ServiceImpl<T>>): RestService {
  return { service, impl: impl as Record<string, unknown> };
}

/** One REST route, derived from an RPC's google.api.http annotation. */
export interface RestRoute {
  readonly httpMethod: string;
  readonly template: PathTemplate;
  /** "" (no body), "*" (the whole request) or the name of the request field the body fills. */
  readonly body: string;
  /** The response field returned as the body, or undefined for the whole response. */
  readonly responseBody: DescField | undefined;
  readonly successStatus: number;
  readonly service: DescService;
  readonly spec: MethodImplSpec & { kind: "unary" };
}

export interface RestTranscoderOptions {
  readonly services: readonly RestService[];
  /** The interceptors of the Connect router, so REST calls pass through the same ones. */
  readonly interceptors: readonly Interceptor[];
  /** Resolves error detail types so they are rendered as JSON rather than base64. */
  readonly registry: Registry;
  readonly maxBodyBytes: number;
  readonly shutdownSignal?: AbortSignal;
  /** Values for each call's context, as the Connect adapter's option of the same name. */
  readonly contextValues?: (req: NodeRequest) => ContextValues;
}

const NEVER_ABORTED = new AbortController().signal;
const noTimeout = () => undefined;
const nothingToAbort = () => {};

/** Responses carry every field, as the other protocols do with the router's JSON options. */
const JSON_WRITE = { alwaysEmitImplicit: true } as const;

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

export function routesFromServices(services: readonly RestService[]): RestRoute[] {
  const routes: RestRoute[] = [];
  for (const { service, impl } of services) {
    for (const method of service.methods) {
      const implementation = impl[method.localName];
      if (method.methodKind !== "unary" || implementation === undefined || !hasOption(method, http)) continue;
      const spec = createMethodImplSpec(method, implementation as never) as RestRoute["spec"];
      const successStatus = hasOption(method, rest_success_status) ? getOption(method, rest_success_status) : 200;
      const rule = getOption(method, http);
      for (const binding of [rule, ...rule.additionalBindings]) {
        const pattern = patternOf(binding);
        if (pattern === undefined) continue;
        const responseBody = binding.responseBody || rule.responseBody;
        routes.push({
          httpMethod: pattern.method,
          template: parsePathTemplate(pattern.path),
          body: binding.body,
          responseBody: responseBody === "" ? undefined : method.output.fields.find((f) => f.name === responseBody),
          successStatus,
          service,
          spec,
        });
      }
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
 * Serves REST/JSON routes by running each RPC's own implementation, through the same interceptors
 * as the Connect router, on a request message built from the path, query and body. Only the
 * HTTP framing differs from the other protocols: decoding, validation and error mapping are shared.
 */
export function createRestTranscoder(options: RestTranscoderOptions) {
  const routes = routesFromServices(options.services);
  const interceptors = [...options.interceptors];

  async function handle(req: NodeRequest, res: NodeResponse): Promise<void> {
    try {
      const url = new URL(req.url ?? "/", "http://localhost");
      const { route, pathValues } = findRoute(req.method ?? "GET", url.pathname);
      const body = route.body === "" ? undefined : await readJsonBody(req, options.maxBodyBytes);
      const message = requestMessage(route, requestJson(route, pathValues, body, url.searchParams));
      await invoke(route, message, req, res, url);
    } catch (error) {
      if (error instanceof RestRequestError) {
        writeJson(res, error.status, { code: error.code, message: error.message, details: [] }, error.headers);
      } else {
        const connectError = ConnectError.from(error);
        writeJson(res, codeToHttpStatus(connectError.code), restError(connectError, options.registry), headersOf(connectError.metadata));
      }
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

  async function invoke(route: RestRoute, input: unknown, req: NodeRequest, res: NodeResponse, url: URL) {
    const context = handlerContext(route, req, url);
    const output = await invokeUnaryImplementation(route.spec, context, input as never, interceptors);
    const payload = Buffer.from(responseJson(route, output as Record<string, unknown>));
    res.writeHead(route.successStatus, {
      ...headersOf(context.responseHeader),
      "content-type": "application/json",
      "content-length": String(payload.length),
    });
    res.end(payload);
  }

  /**
   * The context of one REST call. It runs on the shutdown signal itself: implementations here
   * never read a per-call signal (a publish is one database call that cannot be half-done), so
   * linking a fresh AbortController per call, and unlinking it after, would be work for nothing.
   */
  function handlerContext(route: RestRoute, req: NodeRequest, url: URL): HandlerContext & { abort(): void } {
    return {
      service: route.service,
      method: route.spec.method,
      protocolName: "rest",
      requestMethod: req.method ?? "GET",
      url: url.toString(),
      requestHeader: new Headers(requestHeaders(req)),
      signal: options.shutdownSignal ?? NEVER_ABORTED,
      timeoutMs: noTimeout,
      responseHeader: new Headers(),
      responseTrailer: new Headers(),
      values: options.contextValues?.(req) ?? createContextValues(),
      abort: nothingToAbort,
    };
  }

  return { handle, routes };
}

/** Headers an error carries for the client (Retry-After on a rate limit, for instance). */
function headersOf(metadata: Headers): Record<string, string> {
  const headers: Record<string, string> = {};
  metadata.forEach((value, key) => {
    headers[key] = value;
  });
  return headers;
}

function requestMessage(route: RestRoute, json: JsonObject): unknown {
  try {
    return fromJson(route.spec.method.input, json);
  } catch (error) {
    throw new RestRequestError(400, "invalid_argument", (error as Error).message);
  }
}

/**
 * JSON of messages already written, by identity. Implementations return the same message object
 * for the same stored state (cached entries), and never change a message once returned, so its
 * JSON can be reused.
 */
const writtenJson = new WeakMap<object, string>();

function responseJson(route: RestRoute, output: Record<string, unknown>): string {
  const field = route.responseBody;
  if (field === undefined) return toJsonString(route.spec.method.output, output as never, JSON_WRITE);
  const value = output[field.localName] as object | undefined;
  if (field.message === undefined || value === undefined) return "{}";
  let json = writtenJson.get(value);
  if (json === undefined) {
    json = toJsonString(field.message, value as never, JSON_WRITE);
    writtenJson.set(value, json);
  }
  return json;
}

function requestHeaders(req: NodeRequest): Record<string, string> {
  const headers: Record<string, string> = {};
  for (const [key, value] of Object.entries(req.headers)) {
    // HTTP/2 pseudo-headers (":path") are not headers a handler reads.
    if (key.startsWith(":") || value === undefined) continue;
    headers[key] = Array.isArray(value) ? value.join(", ") : value;
  }
  return headers;
}

async function readJsonBody(req: NodeRequest, maxBytes: number): Promise<JsonValue | undefined> {
  const declared = Number(req.headers["content-length"] ?? 0);
  if (declared > maxBytes) throw tooLarge(maxBytes);
  // Plain stream events: an async iterator over the request costs noticeably more per request.
  const bytes = await new Promise<Buffer>((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    req.on("data", (chunk: Buffer) => {
      size += chunk.length;
      if (size > maxBytes) {
        req.removeAllListeners("data");
        req.resume();
        reject(tooLarge(maxBytes));
        return;
      }
      chunks.push(chunk);
    });
    req.once("end", () => resolve(chunks.length === 1 ? (chunks[0] as Buffer) : Buffer.concat(chunks)));
    req.once("error", reject);
  });
  if (bytes.length === 0) return undefined;
  try {
    return JSON.parse(bytes.toString("utf8")) as JsonValue;
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
  const input = route.spec.method.input;
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

/**
 * The REST error body: Connect's code name and message, with details decoded into JSON objects
 * with an "@type" (the google.protobuf.Any JSON form) instead of Connect's base64 wire form.
 */
function restError(error: ConnectError, registry: Registry): JsonObject {
  const details = error.details.map((detail): JsonValue => {
    if ("desc" in detail) {
      const message = create(detail.desc, detail.value);
      return { "@type": `type.googleapis.com/${detail.desc.typeName}`, ...(toJson(detail.desc, message, { registry }) as JsonObject) };
    }
    const schema = registry.getMessage(detail.type);
    if (schema === undefined) return { "@type": `type.googleapis.com/${detail.type}` };
    return {
      "@type": `type.googleapis.com/${detail.type}`,
      ...(toJson(schema, fromBinary(schema, detail.value), { registry }) as JsonObject),
    };
  });
  return { code: codeName(error.code), message: error.rawMessage, details };
}

/** Connect's wire name of a code: Code.InvalidArgument is "invalid_argument". */
function codeName(code: Code): string {
  return Code[code].replace(/([a-z])([A-Z])/g, "$1_$2").toLowerCase();
}

function writeJson(res: JsonResponseTarget, status: number, body: JsonValue, headers: Record<string, string> = {}) {
  const bytes = Buffer.from(JSON.stringify(body));
  res.writeHead(status, { ...headers, "content-type": "application/json", "content-length": String(bytes.length) });
  res.end(bytes);
}

export { writeJson };
