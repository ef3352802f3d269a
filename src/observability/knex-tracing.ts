import { SpanKind, SpanStatusCode, trace, type Context, type Span, type Tracer } from "@opentelemetry/api";
import {
  ATTR_DB_OPERATION_NAME,
  ATTR_DB_QUERY_TEXT,
  ATTR_DB_RESPONSE_STATUS_CODE,
  ATTR_DB_SYSTEM_NAME,
  ATTR_ERROR_TYPE,
  DB_SYSTEM_NAME_VALUE_POSTGRESQL,
} from "@opentelemetry/semantic-conventions";
import type { Knex } from "knex";

/**
 * Database spans from knex's own events rather than @opentelemetry/instrumentation-pg. That
 * instrumentation patches `pg` as it is first required, so it must be in place before any module
 * loads pg (for this project's ES modules, through a loader preloaded with --import): at odds with
 * deciding from the config, at start, whether to trace at all, and with loading nothing of
 * OpenTelemetry when tracing is off. knex's events need no patching, arrive in the calling code's
 * async context, and say which pool ran the query.
 */

export interface QueryTracingOptions {
  readonly tracer: Tracer;
  /** The context queries run in: the traced call's, when there is one. */
  readonly activeContext: () => Context;
  /** The pool's name ("primary", "replica-1"), on every span. */
  readonly pool: string;
}

/** What knex passes with `query`, `query-response` and `query-error`. */
interface KnexQueryEvent {
  readonly __knexQueryUid?: string;
  readonly sql?: string;
}

/** `db.client.connection.pool.name`, the conventions' name for a pool (from their metrics). */
const ATTR_POOL_NAME = "db.client.connection.pool.name";

/**
 * Queries whose end knex never reported (a knex-level timeout ends the promise, not the query):
 * past this many, the oldest are ended as they are, so a leak cannot grow.
 */
const MAX_OPEN_SPANS = 10_000;

/**
 * Starts a client span for each query `knex` runs inside a traced call, ended by the query's
 * response or error. Queries outside any call (migrations, cache heartbeats, readiness probes) are
 * no one's work and get no span. The span carries the SQL with its placeholders ($1, $2) and never
 * the bound values: those are user data. Returns a function that stops listening.
 */
export function traceKnexQueries(knex: Knex, options: QueryTracingOptions): () => void {
  const { tracer, activeContext, pool } = options;
  const open = new Map<string, Span>();

  const onQuery = (query: KnexQueryEvent) => {
    const uid = query.__knexQueryUid;
    // Transaction control (BEGIN, COMMIT) comes without an id, so its end could not be matched.
    if (uid === undefined) return;
    const parent = activeContext();
    if (trace.getSpan(parent)?.isRecording() !== true) return;
    const sql = query.sql ?? "";
    const operation = operationOf(sql);
    const span = tracer.startSpan(
      operation ?? DB_SYSTEM_NAME_VALUE_POSTGRESQL,
      {
        kind: SpanKind.CLIENT,
        attributes: {
          [ATTR_DB_SYSTEM_NAME]: DB_SYSTEM_NAME_VALUE_POSTGRESQL,
          [ATTR_DB_QUERY_TEXT]: sql,
          [ATTR_POOL_NAME]: pool,
          ...(operation === undefined ? {} : { [ATTR_DB_OPERATION_NAME]: operation }),
        },
      },
      parent,
    );
    open.set(uid, span);
    if (open.size > MAX_OPEN_SPANS) endOldest(open);
  };

  const onResponse = (_response: unknown, query: KnexQueryEvent) => {
    const span = take(open, query);
    span?.end();
  };

  const onError = (error: unknown, query: KnexQueryEvent) => {
    const span = take(open, query);
    if (span === undefined) return;
    // Only the SQLSTATE: knex writes the statement with its values into the error's message.
    const sqlState = sqlStateOf(error);
    if (sqlState !== undefined) span.setAttribute(ATTR_DB_RESPONSE_STATUS_CODE, sqlState);
    span.setAttribute(ATTR_ERROR_TYPE, sqlState ?? errorTypeOf(error));
    span.setStatus({ code: SpanStatusCode.ERROR });
    span.end();
  };

  knex.on("query", onQuery);
  knex.on("query-response", onResponse);
  knex.on("query-error", onError);
  return () => {
    knex.off("query", onQuery);
    knex.off("query-response", onResponse);
    knex.off("query-error", onError);
    for (const span of open.values()) span.end();
    open.clear();
  };
}

function take(open: Map<string, Span>, query: KnexQueryEvent): Span | undefined {
  const uid = query.__knexQueryUid;
  if (uid === undefined) return undefined;
  const span = open.get(uid);
  open.delete(uid);
  return span;
}

function endOldest(open: Map<string, Span>): void {
  for (const [uid, span] of open) {
    open.delete(uid);
    span.end();
    return;
  }
}

/** The statement's first keyword, upper-cased (SELECT, INSERT, WITH, ...): db.operation.name. */
function operationOf(sql: string): string | undefined {
  const match = /^\s*([A-Za-z]+)/.exec(sql);
  return match === null ? undefined : (match[1] as string).toUpperCase();
}

/** Postgres' five-character SQLSTATE (pg and PGlite put it in `code`). */
function sqlStateOf(error: unknown): string | undefined {
  const code = (error as { code?: unknown } | null)?.code;
  return typeof code === "string" && /^[0-9A-Z]{5}$/.test(code) ? code : undefined;
}

function errorTypeOf(error: unknown): string {
  return error instanceof Error ? error.name : "_OTHER";
}
