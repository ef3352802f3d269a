import {
  create,
  createRegistry,
  fromBinary,
  getOption,
  hasOption,
  ScalarType,
  toJson,
  type DescField,
  type DescMessage,
  type JsonObject,
  type JsonValue,
  type Message,
  type Registry,
} from "@bufbuild/protobuf";
import { Code, ConnectError } from "@connectrpc/connect";
import { http } from "../../gen/google/api/annotations_pb.js";
import { BadRequestSchema, RetryInfoSchema } from "../../gen/google/rpc/error_details_pb.js";
import type { HttpRule } from "../../gen/google/api/http_pb.js";
import { rest_success_status } from "../../gen/registry/v1/rest_options_pb.js";
import { InvalidArgumentError } from "../errors.js";
import { decompress, DecompressionError, negotiateEncoding } from "../transport/compression.js";
import { deepFreeze } from "../domain/deep-freeze.js";
import { createDecodedRequests } from "./decoded-requests.js";
import { toConnectError, type ErrorLogger } from "./error-mapping.js";
import { answerConditionally } from "../transport/http-caching.js";
import { BodyTooLargeError, type HttpExchange, type ResponseHeaders } from "../transport/http-exchange.js";
import { rpcName } from "../transport/call-observation.js";
import { matchPathTemplate, parsePathTemplate, PathEncodingError, type PathTemplate } from "./path-template.js";
import { addHeaders, addMetadata, requestEncoding, sendBody, UnsupportedEncodingError } from "../transport/rpc-answers.js";
import { decodeUtf8, messageFromJson, parseJson } from "./rpc/message-codec.js";
import { responseJsonBytes } from "./rpc/reused-encodings.js";
import { unaryMethodsByPath, type ServedService } from "./served-services.js";
import { codeName, httpStatusOf } from "../transport/status-codes.js";
import type { UnaryInvoker } from "../transport/unary-invoker.js";
import type { UnaryMethod } from "../transport/unary-method.js";

/** One REST route, derived from an RPC's google.api.http annotation. */
export interface RestRoute {
  readonly httpMethod: string;
  readonly template: PathTemplate;
  /** "" (no body), "*" (the whole request) or the name of the request field the body fills. */
  readonly body: string;
  /** The response field returned as the body, or undefined for the whole response. */
  readonly responseBody: DescField | undefined;
  readonly successStatus: number;
  readonly target: UnaryMethod;
  /** The HTTP method and template, as the access log names the route: "GET /v1/entries/{did}". */
  readonly name: string;
}

export interface RestTranscoderOptions {
  readonly services: readonly ServedService[];
  readonly invoke: UnaryInvoker;
  readonly maxBodyBytes: number;
  readonly log: ErrorLogger;
}

/** A REST request decoded: its route and the request message built from its path, query and body. */
interface RestRequest {
  readonly route: RestRoute;
  readonly target: UnaryMethod;
  readonly input: Message;
}

/**
 * The error detail types the server attaches (field violations, retry delays), which REST error
 * bodies render as JSON objects rather than base64, and the OpenAPI document describes.
 */
export const ERROR_DETAIL_TYPES: readonly DescMessage[] = [BadRequestSchema, RetryInfoSchema];
const errorDetailRegistry = createRegistry(...ERROR_DETAIL_TYPES);

/** A request that matched no route, or matched one with another HTTP method. */
class RouteMiss extends Error {
  constructor(
    readonly status: 404 | 405,
    message: string,
    readonly allow?: string,
  ) {
    super(message);
  }
}

/** The REST routes of the services' annotated, implemented unary methods: the transcoder's table, and the OpenAPI document's. */
export function routesFromServices(services: readonly ServedService[]): RestRoute[] {
  const routes: RestRoute[] = [];
  for (const target of unaryMethodsByPath(services).values()) {
    const { method } = target;
    if (!hasOption(method, http)) continue;
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
        target,
        name: `${pattern.method} ${pattern.path}`,
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
 * Serves REST/JSON routes by running each RPC's own implementation, through the same invoker
 * (and so the same interceptors) as the other protocols, on a request message built from the
 * path, query and body. Only the HTTP framing differs: decoding, validation and error mapping
 * are shared, and every REST answer, success or error, leaves through this file's two writers.
 */
export function createRestTranscoder(options: RestTranscoderOptions) {
  const routes = routesFromServices(options.services);
  const bodiless = createDecodedRequests<RestRequest>((decoded) => {
    deepFreeze(decoded.input);
    return Object.freeze(decoded);
  });

  async function handle(exchange: HttpExchange): Promise<void> {
    const encoding = negotiateEncoding(exchange.header("accept-encoding"));
    const observation = exchange.observation;
    observation.protocol = "rest";
    try {
      const { route, input } = await decode(exchange);
      const outcome = await options.invoke(route.target, input, { exchange, protocolName: "rest" });
      observation.code = outcome.ok ? "ok" : codeName(outcome.error.code);
      if (exchange.done) return;
      if (!outcome.ok) {
        await writeRestError(exchange, outcome.error, undefined, addHeaders({}, outcome.header), encoding);
        return;
      }
      const headers = addHeaders({}, outcome.header);
      const payload = responseBytesOf(route, outcome.message);
      if ((exchange.method === "GET" || exchange.method === "HEAD") && answerConditionally(exchange, headers, payload)) return;
      await sendBody(exchange, route.successStatus, headers, payload, "application/json", encoding);
    } catch (error) {
      if (error instanceof RouteMiss) {
        const headers: ResponseHeaders = error.allow === undefined ? {} : { allow: error.allow };
        const code = error.status === 404 ? Code.NotFound : Code.Unimplemented;
        await writeRestError(exchange, new ConnectError(error.message, code), error.status, headers, encoding);
      } else {
        await writeRestError(exchange, toConnectError(error, options.log), restStatusOf(error), {}, encoding);
      }
    }
  }

  async function decode(exchange: HttpExchange): Promise<RestRequest> {
    // Reads are what is asked again; a write pays no key.
    const read = exchange.method === "GET" || exchange.method === "HEAD";
    const key = read ? `${exchange.method} ${exchange.path}?${exchange.query}` : undefined;
    const seen = key === undefined ? undefined : bodiless.get(key);
    if (seen !== undefined) {
      nameCall(exchange, seen.route);
      return seen;
    }
    const { route, pathValues } = findRoute(exchange.method, exchange.path);
    // Named before the rest is decoded, so the access line of a bad request says what it called.
    nameCall(exchange, route);
    const body = route.body === "" ? undefined : await readJsonBody(exchange, options.maxBodyBytes);
    const json = requestJson(route, pathValues, body, new URLSearchParams(exchange.query));
    const decoded = { route, target: route.target, input: messageFromJson(route.target.method.input, json) };
    // Only a request without a body is named by its URL alone.
    return key !== undefined && route.body === "" ? bodiless.keep(key, decoded) : decoded;
  }

  function findRoute(method: string, path: string): { route: RestRoute; pathValues: Map<string, string> } {
    const allowed = new Set<string>();
    for (const route of routes) {
      const pathValues = matchedValues(route, path);
      if (pathValues === undefined) continue;
      if (route.httpMethod === method || (method === "HEAD" && route.httpMethod === "GET")) {
        return { route, pathValues };
      }
      allowed.add(route.httpMethod);
    }
    if (allowed.size > 0) throw new RouteMiss(405, `method ${method} is not allowed on ${path}`, [...allowed].join(", "));
    throw new RouteMiss(404, `no route for ${method} ${path}`);
  }

  return { handle, routes, errorDetailTypes: ERROR_DETAIL_TYPES };
}

function nameCall(exchange: HttpExchange, route: RestRoute): void {
  exchange.observation.method = rpcName(route.target.method);
  exchange.observation.route = route.name;
}

/** A route's path variables, or undefined when the path is not the route's; a variable that does not decode is the client's error. */
function matchedValues(route: RestRoute, path: string): Map<string, string> | undefined {
  try {
    return matchPathTemplate(route.template, path);
  } catch (error) {
    if (error instanceof PathEncodingError) throw InvalidArgumentError.of(error.fieldPath, "is not valid percent-encoded UTF-8");
    throw error;
  }
}

/**
 * HTTP distinguishes a body too large (413) from a rate limit (429), both resource_exhausted in
 * Connect's codes; undefined keeps the code's own status.
 */
function restStatusOf(error: unknown): number | undefined {
  if (error instanceof BodyTooLargeError || (error instanceof DecompressionError && error.tooLarge)) return 413;
  if (error instanceof UnsupportedEncodingError) return 415;
  return undefined;
}

async function readJsonBody(exchange: HttpExchange, maxBytes: number): Promise<JsonValue | undefined> {
  const encoding = requestEncoding("content-encoding", exchange.header("content-encoding"));
  let bytes: Uint8Array = await exchange.readBody(maxBytes);
  if (encoding !== undefined) bytes = await decompress(encoding, bytes, maxBytes);
  if (bytes.byteLength === 0) return undefined;
  return parseJson(decodeUtf8(bytes));
}

/**
 * The answer's JSON bytes: the whole response, or the field google.api.http's response_body names.
 * A kept answer's are made once (reused-encodings.ts), so its ETag is computed once too.
 */
function responseBytesOf(route: RestRoute, output: Message): Buffer {
  const field = route.responseBody;
  const schema = route.target.method.output;
  if (field === undefined) return responseJsonBytes(schema, output);
  const value = (output as unknown as Record<string, unknown>)[field.localName] as Message | undefined;
  if (field.message === undefined || value === undefined) return Buffer.from("{}");
  return responseJsonBytes(field.message, value);
}

/**
 * Builds the request message's JSON from the body, the path variables and the query string, the
 * way google.api.http defines it: path variables are the resource's name, so a query parameter
 * naming a path field is refused rather than silently overriding it (or being overridden).
 */
function requestJson(route: RestRoute, pathValues: Map<string, string>, body: JsonValue | undefined, query: URLSearchParams): JsonObject {
  const input = route.target.method.input;
  let message: JsonObject = {};
  if (route.body === "*") {
    if (body !== undefined && (typeof body !== "object" || body === null || Array.isArray(body))) {
      throw InvalidArgumentError.of("body", "must be a JSON object");
    }
    message = { ...(body ?? {}) };
  } else if (route.body !== "" && body !== undefined) {
    message[jsonNameOf(input, route.body)] = body;
  }
  for (const [fieldPath, value] of pathValues) setField(message, input, fieldPath, value);
  if (route.body !== "*") {
    const pathFields = new Set([...pathValues.keys()].map((path) => path.split(".")[0]));
    for (const key of new Set(query.keys())) {
      const field = findField(input, key);
      if (field === undefined) throw InvalidArgumentError.of(key, "is not a query parameter of this route");
      if (pathFields.has(field.name)) throw InvalidArgumentError.of(key, "is given by the path; it cannot also be a query parameter");
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
function restErrorBody(error: ConnectError, registry: Registry): JsonObject {
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

/**
 * The one writer of REST errors: `{"code", "message", "details"}` with the code's HTTP status (or
 * the REST refinement given), the error's metadata (Retry-After, RateLimit) as headers, and never
 * cached. The routes outside the transcoder (the change stream) answer their errors through it too.
 */
export function writeRestError(
  exchange: HttpExchange,
  error: ConnectError,
  status: number | undefined,
  headers: ResponseHeaders,
  encoding: ReturnType<typeof negotiateEncoding>,
): Promise<void> {
  exchange.observation.code = codeName(error.code);
  addMetadata(headers, error.metadata);
  headers["cache-control"] = "no-store";
  const body = Buffer.from(JSON.stringify(restErrorBody(error, errorDetailRegistry)));
  return sendBody(exchange, status ?? httpStatusOf(error.code), headers, body, "application/json", encoding);
}

/** A small JSON answer outside the routes (health probes): no compression, no caching rules. */
export function writeJson(exchange: HttpExchange, status: number, body: JsonValue): void {
  exchange.respond(status, { "content-type": "application/json" }, Buffer.from(JSON.stringify(body)));
}
