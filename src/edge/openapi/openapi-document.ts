import { ScalarType, type DescEnum, type DescField, type DescMessage, type JsonObject, type JsonValue } from "@bufbuild/protobuf";
import type { PathTemplate } from "../path-template.js";
import type { RestRoute } from "../rest-transcoder.js";
import { bearerSchemeOf, isRateLimited } from "../method-policies.js";
import { CODE_NAMES } from "../../transport/status-codes.js";
import { isAlwaysAnswered, isOutputOnly, isRequiredInRequests } from "./field-behavior.js";
import { fieldValues } from "./field-values.js";

/**
 * The OpenAPI 3.1 description of the REST routes, built from the same route table (and so the
 * same descriptors) the transcoder serves: a route, field or status cannot change in one without
 * the other. Schemas follow the proto3 JSON mapping the transcoder speaks.
 *
 * A message has two forms. Its answer form, under its own name, lists as `required` every field
 * each answer carries and marks the fields the server sets (OUTPUT_ONLY) `readOnly`. Its request
 * form leaves those fields out and requires the REQUIRED ones; a method's request message has
 * only this form and keeps its name, any other message's is named `<name>Input`.
 */

export interface OpenApiDocumentOptions {
  readonly routes: readonly RestRoute[];
  /** Error detail types the error body may carry, rendered with their "@type". */
  readonly errorDetailTypes: readonly DescMessage[];
}

/** The API's version: the proto packages' (registry.v1, auth.v1). */
const API_VERSION = "v1";

/** The error body's `code` values: Connect's code names. */
const ERROR_CODES = CODE_NAMES;

/** Each error status the document names, with what it means here. */
const ERROR_RESPONSES: Record<string, string> = {
  "400": "invalid_argument: a field breaks a rule, a signature does not verify, or the body is not the request's JSON.",
  "401": "unauthenticated: the bearer credential is missing, malformed, expired or unknown.",
  "403": "permission_denied: the credential lacks the scope, or the entry belongs to another publisher.",
  "404": "not_found: nothing exists at this path.",
  "405": "unimplemented: the path exists, but not with the method sent; Allow names the methods it has.",
  "409": "already_exists: this resource was created before (also if since revoked).",
  "413": "resource_exhausted: the body is larger than the server accepts (MAX_BODY_BYTES).",
  "415": "unimplemented: the body's Content-Encoding is not gzip or br.",
  "429": "resource_exhausted: a rate limit; retry after Retry-After seconds.",
  "500": "internal: an unexpected failure; the cause is only in the server's log.",
  "503": "unavailable: the database or the token issuer's keys cannot be reached.",
  "504": "deadline_exceeded: a statement ran past the server's timeout.",
};

export function createOpenApiDocument(options: OpenApiDocumentOptions): JsonObject {
  const schemas = new SchemaCollector(new Set(options.routes.map((route) => route.target.method.input.typeName)));
  const paths: Record<string, Record<string, JsonValue>> = {};
  for (const route of options.routes) {
    const path = openApiPath(route.template);
    paths[path] ??= {};
    paths[path][route.httpMethod.toLowerCase()] = operationOf(route, schemas);
  }
  const errorSchemas = errorBodySchemas(options.errorDetailTypes, schemas);
  return {
    openapi: "3.1.0",
    info: {
      title: "Open Registry REST API",
      version: API_VERSION,
      summary: "Signed, versioned skill and agent entries.",
      description:
        "The REST/JSON mapping of the registry's gRPC services (registry.v1.RegistryService, auth.v1.TokenService, auth.v1.AdminService), " +
        "generated from their protos' google.api.http and google.api.field_behavior annotations. JSON follows the proto3 JSON mapping: " +
        "camelCase names, 64-bit integers as strings. Answers carry every field a schema lists as required, at its default too; " +
        "the others (messages, optional fields) only when set. readOnly fields are set by the server and left out of requests. " +
        "A path answers a method it has no operation for with 405 and an Allow header. " +
        "The same methods are served over gRPC, gRPC-Web and Connect.",
      license: { name: "Apache-2.0", identifier: "Apache-2.0" },
    },
    servers: [{ url: "/", description: "This server." }],
    tags: tagsOf(options.routes),
    paths: sortedObject(paths),
    components: {
      schemas: sortedObject({ ...schemas.collected(), ...errorSchemas }),
      responses: sortedObject(errorResponses(options.routes)),
      headers: rateLimitHeaders(),
      securitySchemes: {
        accessToken: {
          type: "http",
          scheme: "bearer",
          bearerFormat: "JWT",
          description: "An access token from POST /v1/tokens, bound to a publisher and carrying its scopes.",
        },
        rootToken: {
          type: "http",
          scheme: "bearer",
          description: "A root token an operator issued with `registry root-token create`; exchanged for access tokens.",
        },
        adminCredential: {
          type: "http",
          scheme: "bearer",
          description:
            "The admin credential a server writes at start to <REGISTRY_DATA_DIR>/admin-credential (mode 0600) and removes when it stops; " +
            "only its operator can read it. The admin routes exist only where the server enables them (ADMIN_API).",
        },
      },
    },
  };
}

/** How a document is written out, to docs/openapi.json and by the server: two-space JSON and a final newline. */
export function openApiText(document: JsonObject): string {
  return `${JSON.stringify(document, null, 2)}\n`;
}

/** A route's path in OpenAPI's syntax: each `{field=pattern}` variable becomes `{field}`. */
export function openApiPath(template: PathTemplate): string {
  return template.source.replace(/\{([^}=]+)(?:=[^}]*)?\}/g, "{$1}");
}

function operationOf(route: RestRoute, schemas: SchemaCollector): JsonObject {
  const { method, service } = route.target;
  const pathFields = new Set(route.template.variables.map((variable) => variable.fieldPath));
  const scheme = bearerSchemeOf(method);
  const operation: JsonObject = {
    operationId: `${service.name}_${method.name}`,
    summary: `${service.name}.${method.name}`,
    tags: [service.typeName],
    parameters: [...pathParameters(route, pathFields), ...queryParameters(route, pathFields, schemas)],
  };
  const body = requestBodyOf(route, pathFields, schemas);
  if (body !== undefined) operation.requestBody = body;
  operation.responses = responsesOf(route, schemas);
  operation.security = scheme === undefined ? [] : [{ [scheme]: [] }];
  return operation;
}

function pathParameters(route: RestRoute, pathFields: ReadonlySet<string>): JsonValue[] {
  return [...pathFields].map((fieldPath) => {
    const field = fieldAt(route.target.method.input, fieldPath);
    return {
      name: fieldPath,
      in: "path",
      required: true,
      description: `The request's \`${field === undefined ? fieldPath : field.jsonName}\` field, percent-encoded.`,
      schema: { type: "string" },
    };
  });
}

/** Every top-level field the path and body leave is a query parameter (the transcoder's rule). */
function queryParameters(route: RestRoute, pathFields: ReadonlySet<string>, schemas: SchemaCollector): JsonValue[] {
  if (route.body === "*") return [];
  const topLevelPathFields = topLevelFields(pathFields);
  return route.target.method.input.fields
    .filter((field) => !topLevelPathFields.has(field.name) && field.name !== route.body && field.message === undefined)
    .map((field) => ({
      name: field.jsonName,
      in: "query",
      required: isRequiredInRequests(field),
      schema: schemas.fieldSchema(field, "request"),
      ...(field.fieldKind === "list" ? { style: "form", explode: true } : {}),
    }));
}

function requestBodyOf(route: RestRoute, pathFields: ReadonlySet<string>, schemas: SchemaCollector): JsonObject | undefined {
  if (route.body === "") return undefined;
  const input = route.target.method.input;
  const topLevelPathFields = topLevelFields(pathFields);
  let schema: JsonValue;
  if (route.body !== "*") {
    const field = input.fields.find((candidate) => candidate.name === route.body);
    schema = field === undefined ? {} : schemas.fieldSchema(field, "request");
  } else if (pathFields.size === 0) {
    schema = schemas.messageRef(input, "request");
  } else {
    // The path names the resource; the body carries the rest of the request.
    schema = schemas.messageSchema(input, "request", topLevelPathFields);
  }
  // A body that is one field is that field; a whole-request body is needed when it carries a REQUIRED field.
  const required = route.body !== "*" || input.fields.some((field) => !topLevelPathFields.has(field.name) && isRequiredInRequests(field));
  return { required, content: { "application/json": { schema } } };
}

function responsesOf(route: RestRoute, schemas: SchemaCollector): JsonObject {
  const output = route.responseBody?.message ?? route.target.method.output;
  const headers: JsonObject = {};
  if (route.httpMethod === "GET") {
    headers.ETag = {
      description: "A strong validator of the answer's bytes; send it as If-None-Match to get 304.",
      schema: { type: "string" },
    };
  }
  headers["Cache-Control"] = { description: "How long caches may keep the answer.", schema: { type: "string" } };
  if (isRateLimited(route.target.method)) {
    headers.RateLimit = { $ref: "#/components/headers/RateLimit" };
    headers["RateLimit-Policy"] = { $ref: "#/components/headers/RateLimit-Policy" };
  }
  const responses: JsonObject = {
    [String(route.successStatus)]: {
      description: route.successStatus === 201 ? "Created." : "OK.",
      headers,
      content: { "application/json": { schema: schemas.messageRef(output, "answer") } },
    },
  };
  if (route.httpMethod === "GET") responses["304"] = { description: "Not Modified: If-None-Match named the current ETag." };
  for (const status of errorStatusesOf(route)) responses[status] = { $ref: `#/components/responses/Error${status}` };
  return responses;
}

/**
 * The error statuses a route can answer, from what the route is: every route can be sent a bad
 * request and meet a failing database, and its path a method it has no route for (405); a path
 * variable names something that may not exist; a body can be too large or in an unknown coding;
 * a credential can be refused; a create can find its resource already there; a limited route can
 * be limited.
 */
function errorStatusesOf(route: RestRoute): string[] {
  const statuses = ["400"];
  if (bearerSchemeOf(route.target.method) !== undefined) statuses.push("401", "403");
  if (route.template.variables.length > 0) statuses.push("404");
  statuses.push("405");
  if (route.successStatus === 201) statuses.push("409");
  if (route.body !== "") statuses.push("413", "415");
  if (isRateLimited(route.target.method)) statuses.push("429");
  statuses.push("500", "503", "504");
  return statuses;
}

function errorResponses(routes: readonly RestRoute[]): Record<string, JsonValue> {
  const used = new Set(routes.flatMap(errorStatusesOf));
  const responses: Record<string, JsonValue> = {};
  for (const [status, description] of Object.entries(ERROR_RESPONSES)) {
    if (!used.has(status)) continue;
    const headers: JsonObject = { "Cache-Control": { description: "Always no-store.", schema: { type: "string", const: "no-store" } } };
    if (status === "405") {
      headers.Allow = { description: "The methods the path has, comma-separated.", required: true, schema: { type: "string" } };
    }
    if (status === "429") {
      headers["Retry-After"] = {
        description: "Seconds until a retry can succeed.",
        required: true,
        schema: { type: "integer", minimum: 1 },
      };
      headers.RateLimit = { $ref: "#/components/headers/RateLimit" };
      headers["RateLimit-Policy"] = { $ref: "#/components/headers/RateLimit-Policy" };
    }
    responses[`Error${status}`] = {
      description,
      headers,
      content: { "application/json": { schema: { $ref: "#/components/schemas/Error" } } },
    };
  }
  return responses;
}

/** The headers of draft-ietf-httpapi-ratelimit-headers, as src/edge/rate-limit-interceptor.ts sends them. */
function rateLimitHeaders(): JsonObject {
  return {
    RateLimit: {
      description:
        'What is left of the caller\'s bucket under a policy: `"<policy>";r=<remaining>;t=<seconds until full>` ' +
        "(policies: reads, writes, tokens). Sent when the server enforces that limit.",
      schema: { type: "string", examples: ['"reads";r=19;t=1'] },
    },
    "RateLimit-Policy": {
      description: 'The policy\'s quota and window: `"<policy>";q=<bucket size>;w=<seconds to refill>`.',
      schema: { type: "string", examples: ['"reads";q=20;w=1'] },
    },
  };
}

/** The REST error body, `{code, message, details}`, with the detail types it may carry. */
function errorBodySchemas(detailTypes: readonly DescMessage[], schemas: SchemaCollector): Record<string, JsonValue> {
  const detailRefs = detailTypes.map((type) => ({
    allOf: [
      {
        type: "object",
        required: ["@type"],
        properties: { "@type": { type: "string", const: `type.googleapis.com/${type.typeName}` } },
      },
      schemas.messageRef(type, "answer"),
    ],
  }));
  return {
    Error: {
      type: "object",
      description: "Every REST error: the Connect code's name, a message for people, and typed details.",
      required: ["code", "message", "details"],
      properties: {
        code: { type: "string", enum: [...ERROR_CODES] },
        message: { type: "string" },
        details: {
          type: "array",
          description: 'google.protobuf.Any values in their JSON form: an "@type" and the detail\'s fields.',
          items:
            detailRefs.length === 0
              ? { $ref: "#/components/schemas/ErrorDetail" }
              : { anyOf: [...detailRefs, { $ref: "#/components/schemas/ErrorDetail" }] },
        },
      },
    },
    ErrorDetail: {
      type: "object",
      description: "A detail of any type.",
      required: ["@type"],
      properties: { "@type": { type: "string" } },
    },
  };
}

function tagsOf(routes: readonly RestRoute[]): JsonValue[] {
  const services = new Map(routes.map((route) => [route.target.service.typeName, route.target.service.name]));
  return [...services]
    .sort(([a], [b]) => (a < b ? -1 : 1))
    .map(([name, short]) => ({ name, description: `The ${short} RPCs' REST routes.` }));
}

/** The top-level fields that field paths ("a.b") start in. */
function topLevelFields(fieldPaths: ReadonlySet<string>): Set<string> {
  return new Set([...fieldPaths].map((path) => path.split(".", 1).join("")));
}

function fieldAt(message: DescMessage, fieldPath: string): DescField | undefined {
  let descriptor: DescMessage | undefined = message;
  let field: DescField | undefined;
  for (const name of fieldPath.split(".")) {
    field = descriptor?.fields.find((candidate) => candidate.name === name);
    descriptor = field?.message;
  }
  return field;
}

function sortedObject<T>(object: Record<string, T>): Record<string, T> {
  return Object.fromEntries(Object.entries(object).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)));
}

/** The JSON form of the well-known types that have a special one (the proto3 JSON mapping). */
const WELL_KNOWN: Record<string, JsonObject> = {
  "google.protobuf.Struct": { type: "object", additionalProperties: true, description: "Any JSON object." },
  "google.protobuf.Value": { description: "Any JSON value." },
  "google.protobuf.ListValue": { type: "array", description: "Any JSON array.", items: {} },
  "google.protobuf.Timestamp": { type: "string", format: "date-time" },
  "google.protobuf.Duration": {
    type: "string",
    pattern: "^-?[0-9]+(\\.[0-9]{1,9})?s$",
    description: 'Seconds with an "s" suffix, e.g. "1.5s".',
  },
  "google.protobuf.FieldMask": { type: "string", description: "Comma-separated camelCase field paths." },
  "google.protobuf.Empty": { type: "object" },
  "google.protobuf.Any": { type: "object", required: ["@type"], properties: { "@type": { type: "string" } } },
  "google.protobuf.StringValue": { type: ["string", "null"] },
  "google.protobuf.BoolValue": { type: ["boolean", "null"] },
  "google.protobuf.Int32Value": { type: ["integer", "null"], format: "int32" },
  "google.protobuf.UInt32Value": { type: ["integer", "null"], format: "int64", minimum: 0 },
  "google.protobuf.Int64Value": { type: ["string", "null"], format: "int64", pattern: "^-?[0-9]+$" },
  "google.protobuf.UInt64Value": { type: ["string", "null"], pattern: "^[0-9]+$" },
  "google.protobuf.FloatValue": { type: ["number", "null"], format: "float" },
  "google.protobuf.DoubleValue": { type: ["number", "null"], format: "double" },
  "google.protobuf.BytesValue": { type: ["string", "null"], contentEncoding: "base64" },
};

/** Which side of a call a schema describes: what a client sends, or what the server answers. */
type Form = "request" | "answer";

/** Builds field and message schemas, collecting each referenced message form once under components. */
class SchemaCollector {
  private readonly schemas = new Map<string, JsonValue>();
  /** The message and form each schema name was given to, so that no two share one. */
  private readonly owners = new Map<string, string>();

  /** @param requestMessages the methods' request messages: their request form keeps their name. */
  constructor(private readonly requestMessages: ReadonlySet<string>) {}

  collected(): Record<string, JsonValue> {
    return Object.fromEntries(this.schemas);
  }

  messageRef(message: DescMessage, form: Form): JsonObject {
    const wellKnown = WELL_KNOWN[message.typeName];
    if (wellKnown !== undefined) return wellKnown;
    const name = form === "request" && !this.requestMessages.has(message.typeName) ? `${message.typeName}Input` : message.typeName;
    const owner = `${message.typeName} (${form})`;
    const named = this.owners.get(name);
    if (named === undefined) {
      this.owners.set(name, owner);
      this.schemas.set(name, {});
      this.schemas.set(name, this.messageSchema(message, form, new Set()));
    } else if (named !== owner) {
      throw new Error(`the schema name ${name} would describe both ${named} and ${owner}`);
    }
    return { $ref: `#/components/schemas/${name}` };
  }

  /** A message as a JSON object in one form, less the fields named in `omit`. */
  messageSchema(message: DescMessage, form: Form, omit: ReadonlySet<string>): JsonObject {
    const properties: JsonObject = {};
    const required: string[] = [];
    for (const field of message.fields) {
      if (omit.has(field.name) || (form === "request" && isOutputOnly(field))) continue;
      const schema = this.fieldSchema(field, form);
      properties[field.jsonName] = form === "answer" && isOutputOnly(field) ? { ...(schema as JsonObject), readOnly: true } : schema;
      if (form === "answer" ? isAlwaysAnswered(field) : isRequiredInRequests(field)) required.push(field.jsonName);
    }
    return required.length === 0 ? { type: "object", properties } : { type: "object", required, properties };
  }

  fieldSchema(field: DescField, form: Form): JsonValue {
    switch (field.fieldKind) {
      case "list":
        return {
          type: "array",
          items: this.singularSchema(
            field.listKind === "message" ? field.message : field.listKind === "enum" ? field.enum : field.scalar,
            field,
            form,
          ),
        };
      case "map":
        return {
          type: "object",
          additionalProperties: this.singularSchema(
            field.mapKind === "message" ? field.message : field.mapKind === "enum" ? field.enum : field.scalar,
            field,
            form,
          ),
        };
      case "message":
        return this.singularSchema(field.message, field, form);
      case "enum":
        return this.singularSchema(field.enum, field, form);
      case "scalar":
        return this.singularSchema(field.scalar, field, form);
    }
  }

  private singularSchema(type: DescMessage | DescEnum | ScalarType, field: DescField, form: Form): JsonObject {
    if (typeof type === "number") {
      const values = type === ScalarType.STRING ? fieldValues(field) : undefined;
      return values === undefined ? scalarSchema(type) : { type: "string", enum: [...values] };
    }
    if (type.kind === "enum") return { type: "string", enum: type.values.map((value) => value.name) };
    return this.messageRef(type, form);
  }
}

function scalarSchema(scalar: ScalarType): JsonObject {
  switch (scalar) {
    case ScalarType.STRING:
      return { type: "string" };
    case ScalarType.BOOL:
      return { type: "boolean" };
    case ScalarType.BYTES:
      return { type: "string", contentEncoding: "base64" };
    case ScalarType.DOUBLE:
      return { type: "number", format: "double" };
    case ScalarType.FLOAT:
      return { type: "number", format: "float" };
    case ScalarType.INT32:
    case ScalarType.SINT32:
    case ScalarType.SFIXED32:
      return { type: "integer", format: "int32" };
    case ScalarType.UINT32:
    case ScalarType.FIXED32:
      return { type: "integer", format: "int64", minimum: 0, maximum: 4294967295 };
    case ScalarType.UINT64:
    case ScalarType.FIXED64:
      // 64-bit integers are strings in proto3 JSON: a JSON number loses precision past 2^53.
      return { type: "string", pattern: "^[0-9]+$" };
    default:
      return { type: "string", format: "int64", pattern: "^-?[0-9]+$" };
  }
}
