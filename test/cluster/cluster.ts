import { randomInt } from "node:crypto";
import http from "node:http";
import pg from "pg";
import { describe, it } from "vitest";
import { childEnv, runCli } from "../support/child-processes.js";
import { createPublisher, type TestPublisher } from "../support/registry-fixture.js";

/**
 * The cluster .ci/cluster/run starts (a Postgres primary and streaming standby, Redis, two registry
 * replicas, nginx in front), as its CLUSTER_* variables describe it; undefined outside that script,
 * where the cluster tests skip.
 */
export interface Cluster {
  /** nginx over HTTP/1.1: REST, Connect, gRPC-Web. */
  readonly nginxUrl: string;
  /** nginx over h2c, host:port: gRPC. */
  readonly nginxGrpcAddress: string;
  /** The two registry replicas, directly. */
  readonly replicaUrls: readonly [string, string];
  readonly replicaPids: readonly [number, number];
  /** Postgres URLs (superuser) of the primary and of its streaming standby. */
  readonly primaryUrl: string;
  readonly standbyUrl: string;
  /** The read limit every replica applies per client address, its bucket kept in Redis. */
  readonly rateLimitRps: number;
  readonly rateLimitBurst: number;
}

function clusterFromEnv(env: NodeJS.ProcessEnv): Cluster | undefined {
  if (!env.CLUSTER_NGINX_URL) return undefined;
  const pair = <T>(text: string | undefined, parse: (part: string) => T): readonly [T, T] => {
    const parts = (text ?? "").split(",").map(parse);
    if (parts.length !== 2) throw new Error(`expected two comma-separated values, not "${text}"`);
    return [parts[0]!, parts[1]!];
  };
  return {
    nginxUrl: env.CLUSTER_NGINX_URL,
    nginxGrpcAddress: env.CLUSTER_NGINX_GRPC_ADDRESS!,
    replicaUrls: pair(env.CLUSTER_REGISTRY_URLS, String),
    replicaPids: pair(env.CLUSTER_REGISTRY_PIDS, Number),
    primaryUrl: env.CLUSTER_PRIMARY_URL!,
    standbyUrl: env.CLUSTER_STANDBY_URL!,
    rateLimitRps: Number(env.CLUSTER_RATE_LIMIT_RPS),
    rateLimitBurst: Number(env.CLUSTER_RATE_LIMIT_BURST),
  };
}

const cluster = clusterFromEnv(process.env);

/**
 * A describe block that runs in the cluster, or is skipped (shown as such) when there is none, as
 * under `vitest run` without .ci/cluster/run.
 */
export function describeCluster(name: string, body: (target: Cluster) => void): void {
  if (cluster === undefined) {
    describe.skip(name, () => it("runs in the cluster that .ci/cluster/run starts", () => {}));
  } else {
    describe(name, () => body(cluster));
  }
}

/**
 * A loopback address of its own for one client (127.x.y.z; the whole 127/8 reaches this machine).
 * The replicas trust X-Forwarded-For only from 127.0.0.1, where nginx is, so a request sent from
 * here is limited as this address's, whether it goes to a replica directly or through nginx. The
 * read limit is low (a burst of 30), so every client that is not counting refusals takes a new one.
 */
export function clientAddress(): string {
  return `127.${randomInt(1, 255)}.${randomInt(0, 256)}.${randomInt(1, 255)}`;
}

export interface HttpAnswer {
  readonly status: number;
  readonly headers: http.IncomingHttpHeaders;
  readonly body: any;
}

export interface HttpOptions {
  readonly body?: unknown;
  readonly token?: string;
  /** The source address; a fresh one (clientAddress) when not given. */
  readonly from?: string;
}

/** One JSON request over a new HTTP/1.1 connection from `from`. Rejects only when no answer came. */
export function httpJson(method: string, url: string, options: HttpOptions = {}): Promise<HttpAnswer> {
  const payload = options.body === undefined ? undefined : JSON.stringify(options.body);
  const headers: http.OutgoingHttpHeaders = {};
  if (payload !== undefined) headers["content-type"] = "application/json";
  if (options.token !== undefined) headers.authorization = `Bearer ${options.token}`;
  return new Promise((resolve, reject) => {
    const request = http.request(
      url,
      { method, headers, agent: false, localAddress: options.from ?? clientAddress(), timeout: 15_000 },
      (response) => {
        const chunks: Buffer[] = [];
        response.on("data", (chunk: Buffer) => chunks.push(chunk));
        response.on("error", reject);
        response.on("end", () => {
          const text = Buffer.concat(chunks).toString("utf8");
          let body: unknown = text;
          try {
            body = JSON.parse(text);
          } catch {
            // Not JSON (an nginx error page): kept as text.
          }
          resolve({ status: response.statusCode!, headers: response.headers, body });
        });
      },
    );
    request.on("timeout", () => request.destroy(new Error(`${method} ${url}: no answer within 15 s`)));
    request.on("error", reject);
    request.end(payload);
  });
}

export const entryPath = (did: string): string => `/v1/entries/${encodeURIComponent(did)}`;

/** POST /v1/discover for entries with `tag`, one page of `limit`. */
export function discoverTag(baseUrl: string, tag: string, limit: number, cursor?: string): Promise<HttpAnswer> {
  return httpJson("POST", `${baseUrl}/v1/discover`, {
    body: { conditions: [{ field: "tags", op: "CONTAINS", value: tag }], limit, ...(cursor === undefined ? {} : { cursor }) },
  });
}

/** A name no other test or run uses. */
export function uniqueName(prefix: string): string {
  return `${prefix}-${Date.now().toString(36)}-${randomInt(0, 2 ** 32).toString(36)}`;
}

/**
 * A publisher with a key of its own and an access token for skills: the root token made by
 * `registry root-token create` on the primary, as an operator would, exchanged through nginx.
 */
export async function startPublisher(target: Cluster): Promise<{ publisher: TestPublisher; token: string }> {
  const publisher = await createPublisher();
  const scopes = "registry.publish.skill";
  const created = await runCli(
    ["root-token", "create", "--subject", publisher.did, "--scopes", scopes, "--description", "cluster test"],
    childEnv({ DATABASE_URL: target.primaryUrl }),
  );
  if (created.code !== 0) throw new Error(`root-token create failed (${created.code}): ${created.stderr}`);
  const exchanged = await httpJson("POST", `${target.nginxUrl}/v1/tokens`, {
    token: created.stdout.trim(),
    body: { scopes: [scopes] },
  });
  if (exchanged.status !== 200) throw new Error(`token exchange failed: ${exchanged.status} ${JSON.stringify(exchanged.body)}`);
  return { publisher, token: exchanged.body.accessToken as string };
}

/** Runs `work` on a one-off connection to `url`. */
export async function withPostgres<T>(url: string, work: (client: pg.Client) => Promise<T>): Promise<T> {
  const client = new pg.Client({ connectionString: url, application_name: "cluster-test" });
  await client.connect();
  try {
    return await work(client);
  } finally {
    await client.end();
  }
}

/**
 * Calls `attempt` every `intervalMs` until it returns something other than undefined, for at most
 * `boundMs`: for what happens after replication, whose delay the test does not control.
 */
export async function eventually<T>(what: string, boundMs: number, attempt: () => Promise<T | undefined>, intervalMs = 100): Promise<T> {
  const deadline = Date.now() + boundMs;
  for (;;) {
    const outcome = await attempt();
    if (outcome !== undefined) return outcome;
    if (Date.now() > deadline) throw new Error(`${what}: not within ${boundMs} ms`);
    await new Promise((resolve) => setTimeout(resolve, intervalMs));
  }
}
