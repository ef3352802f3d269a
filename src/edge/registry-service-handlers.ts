import { isFieldSet, type DescField, type MessageInitShape } from "@bufbuild/protobuf";
import type { Value } from "@bufbuild/protobuf/wkt";
import type { HandlerContext, ServiceImpl } from "@connectrpc/connect";
import type { Principal } from "../auth/principal.js";
import {
  fieldSpec,
  MESSAGE_FIELDS,
  PUBLISHER_FIELDS,
  REGISTRY_FIELDS,
  type EntryField,
  type EntryFieldSpec,
  type MarkValue,
} from "../domain/entry-fields.js";
import type { EntryInput } from "../domain/entry-rules.js";
import type { StoredEntry, EntryVersionSummary } from "../entries/entry-repository.js";
import type { EntryActionService } from "../entries/entry-action-service.js";
import type { EntryService } from "../entries/entry-service.js";
import type { DiscoveryService } from "../discovery/discovery-service.js";
import type { SearchService } from "../discovery/search-service.js";
import type { JsonValue } from "../discovery/structured-conditions.js";
import { InvalidArgumentError } from "../errors.js";
import { notePrincipal } from "./observability.js";
import type { WriteLimit } from "./rate-limit-interceptor.js";
import {
  ArchiveSchema,
  DeprecationSchema,
  EntrySchema,
  ModerationSchema,
  YankSchema,
  type Entry,
  type EntryVersionSchema,
} from "../../gen/registry/v1/entry_pb.js";
import type { DiscoverCondition, RegistryService } from "../../gen/registry/v1/registry_service_pb.js";

/** Authenticates the caller of a write from its authorization header. */
export type Authenticate = (authorization: string | null) => Promise<Principal>;

export interface RegistryServiceImplOptions {
  readonly entries: EntryService;
  readonly actions: EntryActionService;
  readonly discovery: DiscoveryService;
  readonly search: SearchService;
  readonly authenticate: Authenticate;
  /** How long HTTP caches may keep a resolve of name@version; 0 makes them revalidate it too. */
  readonly resolveMaxAgeSeconds: number;
  /** Draws each create and revoke from its publisher's bucket; absent, writes are not limited. */
  readonly limitWrite?: WriteLimit;
}

/** Stored, but checked with the server (ETag, 304) before every use. */
const REVALIDATE = "no-cache";

/**
 * A name@version changes only when it is revoked, so caches may keep it for the configured time:
 * a revocation reaches every reader within that time. "Latest" moves with every publish, so it
 * is always revalidated.
 */
function resolveCacheControl(did: string, maxAgeSeconds: number): string {
  return did.includes("@") && maxAgeSeconds > 0 ? `public, max-age=${maxAgeSeconds}` : REVALIDATE;
}

/** registry.v1.RegistryService: translation between protobuf messages and the entry service. */
export function createRegistryServiceImpl(options: RegistryServiceImplOptions): ServiceImpl<typeof RegistryService> {
  const { entries, actions, discovery, search, authenticate, limitWrite } = options;

  /** The verified caller of a write, once the write limit let the call through. */
  async function caller(context: HandlerContext): Promise<Principal> {
    let principal: Principal;
    try {
      principal = await authenticate(context.requestHeader.get("authorization"));
    } catch (error) {
      // Known only by its address: refused there once that bucket is empty, else told why not.
      await limitWrite?.(context, undefined);
      throw error;
    }
    notePrincipal(context.values, principal.subject);
    await limitWrite?.(context, principal);
    return principal;
  }

  return {
    async createEntry(request, context) {
      const principal = await caller(context);
      if (request.entry === undefined) throw InvalidArgumentError.of("entry", "is required");
      const stored = await entries.create(principal, entryInputOf(request.entry));
      return { entry: entryMessage(stored) };
    },
    async resolveEntry(request, context) {
      const stored = await entries.resolve(request.did);
      context.responseHeader.set("cache-control", resolveCacheControl(request.did, options.resolveMaxAgeSeconds));
      return { entry: entryMessage(stored) };
    },
    async listEntryVersions(request, context) {
      const versions = await entries.listVersions(request.did);
      context.responseHeader.set("cache-control", REVALIDATE);
      return { versions: versions.map(versionMessage) };
    },
    async revokeEntry(request, context) {
      const principal = await caller(context);
      const revoked = await entries.revoke(principal, request);
      return { entries: revoked.map(entryMessage) };
    },
    async changeLifecycle(request, context) {
      const principal = await caller(context);
      const changed = await actions.changeLifecycle(principal, request);
      return { entries: changed.map(entryMessage) };
    },
    async moderateEntry(request, context) {
      const principal = await caller(context);
      const changed = await actions.moderate(principal, request);
      return { entries: changed.map(entryMessage) };
    },
    async discoverEntries(request) {
      const result = await discovery.discover({
        entryType: request.entryType,
        conditions: request.conditions.map(conditionOf),
        limit: request.limit,
        cursor: request.cursor,
      });
      return {
        entries: result.entries.map(entryMessage),
        total: result.total,
        totalIsLowerBound: result.totalIsLowerBound,
        nextCursor: result.nextCursor,
      };
    },
    async queryEntries(request) {
      const result = await discovery.query({ query: request.query, limit: request.limit, cursor: request.cursor });
      return { entries: [...result.rows], nextCursor: result.nextCursor };
    },
    async searchEntries(request, context) {
      const result = await search.search({ q: request.q, entryType: request.entryType, limit: request.limit, cursor: request.cursor });
      // Every publish may change the ranking: a cache keeps the answer only to revalidate it.
      context.responseHeader.set("cache-control", REVALIDATE);
      return { entries: result.entries.map(entryMessage), nextCursor: result.nextCursor };
    },
  };
}

function conditionOf(condition: DiscoverCondition) {
  return {
    field: condition.field,
    op: condition.op,
    value: condition.value === undefined ? undefined : plainValue(condition.value),
  };
}

/**
 * A google.protobuf.Value as a plain value, keeping NaN and Infinity (which a binary double can
 * carry and JSON.parse makes of 1e400) for the condition rules to refuse by name; protobuf-es's
 * toJson would throw on them instead. Nesting is bounded by the decoder.
 */
function plainValue(value: Value): JsonValue {
  switch (value.kind.case) {
    case "structValue":
      return Object.fromEntries(Object.entries(value.kind.value.fields).map(([key, item]) => [key, plainValue(item)]));
    case "listValue":
      return value.kind.value.values.map(plainValue);
    case "numberValue":
    case "stringValue":
    case "boolValue":
      return value.kind.value;
    default:
      return null;
  }
}

/** The publisher's fields of an Entry message, and the names of any registry fields it carried. */
function entryInputOf(entry: Entry): EntryInput {
  const input: Record<string, unknown> = {};
  for (const field of PUBLISHER_FIELDS) input[field.name] = entry[field.name as keyof Entry];
  input.data ??= {};
  const serviceSetFields = REGISTRY_MESSAGE_FIELDS.filter(([, descriptor]) => isFieldSet(entry, descriptor)).map(([field]) => field.name);
  return { ...(input as EntryInput), serviceSetFields };
}

/** The Entry message's descriptor of each registry-set field (a test holds the catalogue and the message in step). */
const REGISTRY_MESSAGE_FIELDS: readonly (readonly [EntryField, DescField])[] = REGISTRY_FIELDS.map((field) => {
  const descriptor = EntrySchema.fields.find((candidate) => candidate.localName === field.name);
  if (descriptor === undefined) throw new Error(`Entry has no field ${field.name}`);
  return [field, descriptor];
});

/**
 * A stored entry's message. A stored entry has every implicit field, so this literal is what
 * create() would build, without its reflection (a feed page builds a thousand);
 * test/edge/change-json.test.ts holds the two equal. Made for each answer: an answer served
 * again is kept whole, with its encodings (read-answers.ts).
 */
export function entryMessage(entry: StoredEntry): Entry {
  return { $typeName: EntrySchema.typeName, ...entryInit(entry) } as Entry;
}

/** A stored entry's message fields in their proto3 forms: times as RFC 3339 text, absent values unset. */
function entryInit(entry: StoredEntry): MessageInitShape<typeof EntrySchema> {
  const init: Record<string, unknown> = {};
  for (const field of MESSAGE_FIELDS) {
    const value: unknown = entry[field.name as keyof StoredEntry];
    if (value === null) continue;
    init[field.name] =
      value instanceof Date
        ? value.toISOString()
        : Array.isArray(value)
          ? [...value]
          : field.kind === "mark"
            ? markMessage(fieldSpec(field).message, value as MarkValue)
            : value;
  }
  return init as MessageInitShape<typeof EntrySchema>;
}

/** A mark as its message: the members in the message's field order, whatever order the stored JSON has. */
function markMessage(message: EntryFieldSpec["message"], value: MarkValue): Record<string, unknown> {
  const schema = MARK_SCHEMAS[message ?? "Archive"];
  const init: Record<string, unknown> = { $typeName: schema.typeName };
  for (const field of schema.fields) init[field.localName] = value[field.localName] ?? "";
  return init;
}

const MARK_SCHEMAS = Object.freeze({
  Deprecation: DeprecationSchema,
  Yank: YankSchema,
  Moderation: ModerationSchema,
  Archive: ArchiveSchema,
});

function versionMessage(version: EntryVersionSummary): MessageInitShape<typeof EntryVersionSchema> {
  return {
    version: version.version,
    entryDid: version.entryDid,
    status: version.status,
    publishedAt: version.publishedAt.toISOString(),
    sequence: version.sequence,
    deprecated: version.deprecated,
    yanked: version.yanked,
  };
}
