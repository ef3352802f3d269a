import { hostname } from "node:os";
import { pino, type DestinationStream, type Logger as PinoLogger, type LoggerOptions as PinoOptions } from "pino";
import type { LogLevel } from "./config.js";

/**
 * The trace a line belongs to, under the names of OpenTelemetry's log data model, so that a log
 * store links the line to its trace: ids in lower-case hex, flags as two hex digits ("01": sampled).
 */
export interface TraceFields {
  readonly trace_id: string;
  readonly span_id: string;
  readonly trace_flags: string;
}

/** The trace of the call running now, or undefined outside any traced call. */
export type CurrentTrace = () => TraceFields | undefined;

/**
 * One call's access line: what was called, how it ended, for whom, and when tracing is on, in
 * which trace (see src/edge/observability.ts).
 */
export interface AccessRecord extends Partial<TraceFields> {
  readonly requestId: string;
  readonly protocol: string;
  /** The RPC ("package.Service/Method"); absent when the request matched none. */
  readonly method?: string;
  /** REST: the route that matched, e.g. "GET /v1/entries/{did}". */
  readonly route?: string;
  /** The request's path, when it matched no RPC. */
  readonly path?: string;
  /** Connect's code name: "ok", "not_found", "canceled" when the client went away first. */
  readonly code: string;
  /** The HTTP status sent; absent when no answer was sent. */
  readonly status?: number;
  readonly ms: number;
  readonly client: string;
  /** The authenticated caller: its token's subject. */
  readonly principal?: string;
}

/** Structured JSON lines (pino) on standard output. */
export interface Logger {
  debug(message: string, fields?: Record<string, unknown>): void;
  info(message: string, fields?: Record<string, unknown>): void;
  warn(message: string, fields?: Record<string, unknown>): void;
  error(message: string, fields?: Record<string, unknown>): void;
  /** One access line, at info level. */
  access(record: AccessRecord): void;
  /** A logger to the same output whose lines, when written inside a traced call, name its trace. */
  withTrace(current: CurrentTrace): Logger;
}

export interface LoggerOptions {
  /** The least severe level written; default info. */
  readonly level?: LogLevel;
}

/**
 * Header names whose values are credentials. Redacted at any depth up to REDACT_DEPTH, in either
 * case as they are usually spelt, in whatever is logged: fields, errors and their causes (a
 * client library's error may carry the request's headers).
 */
const SECRET_KEYS = [
  "authorization",
  "Authorization",
  "proxy-authorization",
  "Proxy-Authorization",
  "cookie",
  "Cookie",
  "set-cookie",
  "Set-Cookie",
];
const REDACT_DEPTH = 5;

function redactPaths(): string[] {
  const paths: string[] = [];
  for (let depth = 0; depth < REDACT_DEPTH; depth++) {
    for (const key of SECRET_KEYS) paths.push(`${"*.".repeat(depth)}["${key}"]`);
  }
  return paths;
}

/**
 * ISO 8601 times, formatted once per millisecond: under load many lines share one, and
 * Date#toISOString on every line cost about half a microsecond each.
 */
function isoTimeOncePerMillisecond(): () => string {
  let lastMs = -1;
  let text = "";
  return () => {
    const now = Date.now();
    if (now !== lastMs) {
      lastMs = now;
      text = `,"time":"${new Date(now).toISOString()}"`;
    }
    return text;
  };
}

/**
 * A logger writing JSON lines to standard output (through an asynchronous buffer, flushed when
 * the process exits), or to `write` (tests). Lines carry level names ("info"), ISO times, pid and
 * hostname.
 */
export function createLogger(write?: (line: string) => void, options: LoggerOptions = {}): Logger {
  return loggerTo(write === undefined ? standardOutput() : { write }, options, undefined);
}

function loggerTo(destination: DestinationStream, options: LoggerOptions, currentTrace: CurrentTrace | undefined): Logger {
  const general = pino(
    {
      level: options.level ?? "info",
      timestamp: isoTimeOncePerMillisecond(),
      formatters: { level: (label) => ({ level: label }) },
      serializers: { err: pino.stdSerializers.errWithCause },
      redact: { paths: redactPaths(), censor: "[redacted]" },
      // Without tracing no mixin is set, and lines pay nothing for it. A copy: pino writes the
      // line's own fields into the object the mixin returns.
      ...(currentTrace === undefined ? {} : { mixin: () => ({ ...currentTrace() }) }),
    } satisfies PinoOptions,
    destination,
  );
  const accessTime = isoTimeOncePerMillisecond();
  const bindings = `,"pid":${process.pid},"hostname":${JSON.stringify(hostname())}`;
  const accessOn = general.isLevelEnabled("info");
  return {
    debug: (message, fields) => logAt(general, "debug", message, fields),
    info: (message, fields) => logAt(general, "info", message, fields),
    warn: (message, fields) => logAt(general, "warn", message, fields),
    error: (message, fields) => logAt(general, "error", message, fields),
    access: (record) => {
      if (accessOn) destination.write(accessLine(record, accessTime(), bindings));
    },
    withTrace: (current) => loggerTo(destination, options, current),
  };
}

/**
 * An access line, byte for byte what pino writes for `info(record, "call")` (test/edge/observability.test.ts
 * holds the two equal). Access lines are the one log written for every call: their fields are
 * fixed, hold no credentials and need no redaction, and writing them directly costs a fraction of
 * pino's general path (which walks the object and its serializers for every line).
 */
function accessLine(record: AccessRecord, time: string, bindings: string): string {
  let line = `{"level":"info"${time}${bindings},"requestId":${JSON.stringify(record.requestId)},"protocol":${JSON.stringify(record.protocol)}`;
  if (record.method !== undefined) line += `,"method":${JSON.stringify(record.method)}`;
  if (record.route !== undefined) line += `,"route":${JSON.stringify(record.route)}`;
  if (record.path !== undefined) line += `,"path":${JSON.stringify(record.path)}`;
  line += `,"code":${JSON.stringify(record.code)}`;
  if (record.status !== undefined) line += `,"status":${record.status}`;
  line += `,"ms":${record.ms},"client":${JSON.stringify(record.client)}`;
  if (record.principal !== undefined) line += `,"principal":${JSON.stringify(record.principal)}`;
  if (record.trace_id !== undefined) line += `,"trace_id":${JSON.stringify(record.trace_id)}`;
  if (record.span_id !== undefined) line += `,"span_id":${JSON.stringify(record.span_id)}`;
  if (record.trace_flags !== undefined) line += `,"trace_flags":${JSON.stringify(record.trace_flags)}`;
  return `${line},"msg":"call"}\n`;
}

/**
 * Standard output through a buffer written in 4 KiB batches (and at least once a second) rather
 * than a write(2) per line. pino flushes what is left when the process exits; a process killed
 * outright (SIGKILL) loses up to a second of lines.
 */
function standardOutput(): DestinationStream {
  const output = pino.destination({ dest: 1, sync: false, minLength: 4096, periodicFlush: 1000, contentMode: "buffer" });
  // pino's lines are strings built by concatenation, whose UTF-8 length the buffer's string mode
  // measures on every write, slowly (docs/performance.md#rest-and-the-shared-pipeline); a Buffer
  // is flattened and copied once.
  return {
    write: (line: string) => void output.write(Buffer.from(line) as unknown as string),
  };
}

function logAt(logger: PinoLogger, level: "debug" | "info" | "warn" | "error", message: string, fields?: Record<string, unknown>) {
  if (fields === undefined) logger[level](message);
  else logger[level](fields, message);
}

/**
 * An error as a log field: pino's serializer writes its type, message, stack, own properties and
 * its chain of causes. For the server's own log; never sent to clients.
 */
export function describeError(error: unknown): Record<string, unknown> {
  return { err: error };
}
