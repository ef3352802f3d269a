/**
 * h2load (nghttp2's load generator, Debian package nghttp2-client) as the one generator for every
 * protocol: installs it when missing, runs it, and reads its summary and its per-request log.
 *
 * h2load prints no percentiles, so p50/p99 come from `--log-file` (one line per request: start
 * time in µs since the epoch, HTTP status or -1 for a failed stream, µs until the end of the
 * response). Its `--warm-up-time` is not used: with it, h2load 1.52 counts the warm-up's response
 * bytes in "data" but not its requests, which breaks the body-size check below; the bench runs a
 * separate short h2load for the warm-up instead.
 */
import { execFileSync, spawn } from "node:child_process";
import { readFileSync, rmSync } from "node:fs";
import { percentileOfSorted } from "./stats.js";

const H2LOAD = "h2load";
const PACKAGE = "nghttp2-client";

function installedVersion(): string | undefined {
  try {
    return execFileSync(H2LOAD, ["--version"], { encoding: "utf8", stdio: ["ignore", "pipe", "ignore"] }).trim();
  } catch {
    return undefined;
  }
}

/** The h2load version line; installs the Debian package first when h2load is not on the PATH. */
export function ensureH2load(say: (text: string) => void): string {
  const present = installedVersion();
  if (present !== undefined) return present;
  say(`  h2load not found: installing ${PACKAGE} with apt-get`);
  try {
    execFileSync("apt-get", ["update"], { stdio: ["ignore", "ignore", "inherit"] });
    execFileSync("apt-get", ["install", "-y", PACKAGE], {
      stdio: ["ignore", "ignore", "inherit"],
      env: { ...process.env, DEBIAN_FRONTEND: "noninteractive" },
    });
  } catch (error) {
    throw new Error(
      `the benchmark needs h2load and could not install it (apt-get update && apt-get install -y ${PACKAGE} failed: ${(error as Error).message.split("\n")[0]}). ` +
        `Install ${PACKAGE} (or build nghttp2 with its apps) so that h2load is on the PATH, then run the benchmark again.`,
    );
  }
  const installed = installedVersion();
  if (installed === undefined) throw new Error(`apt-get installed ${PACKAGE} but h2load is still not on the PATH`);
  return installed;
}

export interface H2loadSummary {
  /** Requests h2load finished (any status, reset streams included). */
  readonly done: number;
  readonly started: number;
  /** Finished with a 2xx or 3xx status and no stream error. */
  readonly succeeded: number;
  /** h2load's own "failed", "errored" and "timeout" counts. */
  readonly failed: number;
  readonly errored: number;
  readonly timedOut: number;
  /** Counted when a response's headers arrive, so answers still in flight at the end are in them. */
  readonly status: { readonly "2xx": number; readonly "3xx": number; readonly "4xx": number; readonly "5xx": number };
  /** Response body bytes (HTTP/2 DATA payloads; HTTP/1.1 bodies after de-chunking). */
  readonly dataBytes: number;
  readonly headerBytes: number;
}

export interface H2loadResult extends H2loadSummary {
  /** The command line, for the report. */
  readonly command: string;
  readonly seconds: number;
  /** Finished 2xx answers (`ok`) per second of the measured duration. */
  readonly requestsPerSecond: number;
  /** Over 2xx answers only, from the per-request log. */
  readonly latencyP50Ms: number;
  readonly latencyP99Ms: number;
  readonly latencyMaxMs: number;
  /** Requests that were not a 2xx answer, whatever the reason (non-2xx status, reset, timeout). */
  readonly notOk: number;
  /** Finished 2xx answers, from the per-request log. */
  readonly ok: number;
  /**
   * At least this many 2xx answers carried less than a whole answer's body: errors h2load cannot
   * see, such as a gRPC status in trailers or a gRPC-Web status in the body.
   */
  readonly shortBodies: number;
}

export interface H2loadRequest {
  /** Arguments that choose the protocol and concurrency: `--h1 -c32`, or `-c4 -m32`. */
  readonly shape: readonly string[];
  readonly url: string;
  readonly headers?: readonly string[];
  /** A file whose bytes are every request's body (makes the request a POST). */
  readonly bodyFile?: string;
}

function shellQuote(arg: string): string {
  return /^[\w@%+=:,./-]+$/.test(arg) ? arg : `'${arg.replace(/'/g, `'\\''`)}'`;
}

export function h2loadArgs(request: H2loadRequest, seconds: number, logFile?: string): string[] {
  return [
    ...request.shape,
    "-D",
    String(seconds),
    ...(request.headers ?? []).flatMap((header) => ["-H", header]),
    ...(request.bodyFile === undefined ? [] : ["-d", request.bodyFile]),
    ...(logFile === undefined ? [] : ["--log-file", logFile]),
    request.url,
  ];
}

export function commandLine(args: readonly string[]): string {
  return [H2LOAD, ...args].map(shellQuote).join(" ");
}

/** Runs h2load to the end and returns its stdout; stderr goes to `log`. */
function runProcess(args: readonly string[], log: (text: string) => void): Promise<string> {
  return new Promise((resolve, reject) => {
    const child = spawn(H2LOAD, args, { stdio: ["ignore", "pipe", "pipe"] });
    let stdout = "";
    child.stdout.on("data", (chunk: Buffer) => (stdout += chunk.toString()));
    child.stderr.on("data", (chunk: Buffer) => log(chunk.toString()));
    child.once("error", reject);
    child.once("exit", (code, signal) => {
      log(`$ ${commandLine(args)}\n${stdout}`);
      if (code === 0) resolve(stdout);
      else reject(new Error(`h2load exited with ${code ?? signal}: ${commandLine(args)}\n${stdout.slice(-2000)}`));
    });
  });
}

const count = (text: string, pattern: RegExp): number => {
  const match = pattern.exec(text);
  if (match?.[1] === undefined) throw new Error(`h2load output has no ${pattern.source}:\n${text}`);
  return Number(match[1]);
};

export function parseSummary(text: string): H2loadSummary {
  return {
    started: count(text, /requests: \d+ total, (\d+) started/),
    done: count(text, /requests: .* (\d+) done/),
    succeeded: count(text, /requests: .* (\d+) succeeded/),
    failed: count(text, /requests: .* (\d+) failed/),
    errored: count(text, /requests: .* (\d+) errored/),
    timedOut: count(text, /requests: .* (\d+) timeout/),
    status: {
      "2xx": count(text, /status codes: (\d+) 2xx/),
      "3xx": count(text, /status codes: .* (\d+) 3xx/),
      "4xx": count(text, /status codes: .* (\d+) 4xx/),
      "5xx": count(text, /status codes: .* (\d+) 5xx/),
    },
    headerBytes: count(text, /traffic: .*\((\d+)\) headers/),
    dataBytes: count(text, /traffic: .*\((\d+)\) data/),
  };
}

/** Latencies of the 2xx answers in an h2load log, sorted, in milliseconds. */
function okLatencies(logFile: string): Float64Array {
  const text = readFileSync(logFile, "latin1");
  const values = new Float64Array(text.length / 20 + 16);
  let n = 0;
  let lineStart = 0;
  while (lineStart < text.length) {
    let lineEnd = text.indexOf("\n", lineStart);
    if (lineEnd < 0) lineEnd = text.length;
    const tab1 = text.indexOf("\t", lineStart);
    const tab2 = tab1 < 0 ? -1 : text.indexOf("\t", tab1 + 1);
    if (tab2 > 0 && tab2 < lineEnd) {
      const status = Number(text.slice(tab1 + 1, tab2));
      if (status >= 200 && status < 300) {
        let tab3 = text.indexOf("\t", tab2 + 1);
        if (tab3 < 0 || tab3 > lineEnd) tab3 = lineEnd;
        values[n++] = Number(text.slice(tab2 + 1, tab3)) / 1000;
      }
    }
    lineStart = lineEnd + 1;
  }
  return values.subarray(0, n).sort();
}

/** A warm-up run: the same load, nothing recorded. */
export async function warmUp(request: H2loadRequest, seconds: number, log: (text: string) => void): Promise<void> {
  if (seconds > 0) await runProcess(h2loadArgs(request, seconds), log);
}

/**
 * One measured run: h2load's summary plus latency percentiles from its per-request log, with every
 * 2xx answer held to `bodyBytes`, the size of a checked successful answer's body.
 */
export async function measureH2load(
  request: H2loadRequest,
  seconds: number,
  bodyBytes: number,
  logFile: string,
  log: (text: string) => void,
): Promise<H2loadResult> {
  const args = h2loadArgs(request, seconds, logFile);
  rmSync(logFile, { force: true });
  const summary = parseSummary(await runProcess(args, log));
  const latencies = okLatencies(logFile);
  rmSync(logFile, { force: true });
  // The log has one line per finished request; the summary's 2xx count also has answers whose
  // headers had arrived when the run stopped.
  const ok = latencies.length;
  // Each 2xx answer must have brought a whole body; an error answer brings less (a trailers-only
  // gRPC error none). Partial bodies of requests cut off at the end can only add bytes.
  const missing = ok * bodyBytes - summary.dataBytes;
  return {
    ...summary,
    command: commandLine(args),
    seconds,
    requestsPerSecond: ok / seconds,
    latencyP50Ms: percentileOfSorted(latencies, 50),
    latencyP99Ms: percentileOfSorted(latencies, 99),
    latencyMaxMs: latencies.at(-1) ?? Number.NaN,
    // "done" counts every closed stream, reset ones included; requests still in flight at the end are not in it.
    notOk: summary.done - ok + summary.timedOut,
    ok,
    shortBodies: missing > 0 ? Math.ceil(missing / bodyBytes) : 0,
  };
}
