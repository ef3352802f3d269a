import { randomBytes } from "node:crypto";
import { once } from "node:events";
import { writeFile } from "node:fs/promises";
import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { join } from "node:path";
import { create, toBinary } from "@bufbuild/protobuf";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { BadRequestSchema } from "../../gen/google/rpc/error_details_pb.js";
import { encodePrivateKey } from "../../src/sdk/index.js";
import { childEnv, temporaryDirectory } from "../support/child-processes.js";
import { HOSTILE, HOSTILE_TEXT, linesOf, runCliChecked, VISIBLE_TEXT } from "./cli-terminal-bytes.js";

/**
 * A hostile registry: a plain node:http server speaking the Connect protocol's JSON, whose every
 * answer carries terminal controls (escape sequences, an OSC 52 clipboard write, CR and LF drawing
 * forged lines, bidi overrides, C1 controls) in entries, versions, rows, a token's subject and
 * scopes, and error messages and field violations. The CLI shows them escaped, one value per line
 * and column, and with --json gives the exact values back.
 */

const CLI_MS = 120_000;
/** A DID in a request that asks the hostile server for a refusal, or for not-found. */
const REFUSED = "did:reg:main:skill:refused";
const MISSING = "did:reg:main:skill:missing";

const hostileEntry = {
  entryDid: `did:reg:main:skill:x${HOSTILE_TEXT}`,
  entryType: HOSTILE_TEXT,
  version: HOSTILE_TEXT,
  publisherDid: HOSTILE_TEXT,
  publishedAt: HOSTILE_TEXT,
  description: HOSTILE_TEXT,
  tags: [HOSTILE.screen, HOSTILE.lineFeed, HOSTILE.bidi],
  data: { [HOSTILE.clipboard]: HOSTILE_TEXT },
  contentHash: HOSTILE_TEXT,
  status: `revoked${HOSTILE.carriageReturn}`,
  revokedAt: HOSTILE_TEXT,
  revocationReason: HOSTILE_TEXT,
};
const violation = { field: `tags[0]${HOSTILE.lineFeed}`, description: HOSTILE_TEXT };

/** Each method's answer, by its Connect path. */
const ANSWERS: Readonly<Record<string, (request: { did?: string }) => Answer>> = {
  "/registry.v1.RegistryService/ResolveEntry": ({ did }) => {
    if (did === REFUSED) return refusal();
    if (did === MISSING) return { status: 404, body: { code: "not_found", message: HOSTILE_TEXT } };
    return { status: 200, body: { entry: hostileEntry } };
  },
  "/registry.v1.RegistryService/ListEntryVersions": () => ({
    status: 200,
    body: { versions: [{ version: HOSTILE_TEXT, entryDid: HOSTILE_TEXT, status: HOSTILE_TEXT, publishedAt: HOSTILE_TEXT }] },
  }),
  "/registry.v1.RegistryService/DiscoverEntries": () => ({ status: 200, body: { entries: [hostileEntry], total: 1 } }),
  "/registry.v1.RegistryService/QueryEntries": () => ({
    status: 200,
    body: { entries: [{ [HOSTILE.tab]: HOSTILE_TEXT, data: { [HOSTILE.lineFeed]: HOSTILE_TEXT } }] },
  }),
  "/auth.v1.TokenService/IssueToken": () => ({
    status: 200,
    body: { accessToken: "hostile", tokenType: "Bearer", expiresAt: "2099-01-01T00:00:00Z", scopes: [HOSTILE_TEXT], subject: HOSTILE_TEXT },
  }),
};

interface Answer {
  readonly status: number;
  readonly body: unknown;
}

/** invalid_argument with a hostile message and a google.rpc.BadRequest naming a hostile field. */
function refusal(): Answer {
  const details = toBinary(BadRequestSchema, create(BadRequestSchema, { fieldViolations: [violation] }));
  return {
    status: 400,
    body: {
      code: "invalid_argument",
      message: HOSTILE_TEXT,
      details: [{ type: "google.rpc.BadRequest", value: Buffer.from(details).toString("base64").replace(/=+$/, "") }],
    },
  };
}

let server: Server;
let url: string;
let scratch: { path: string; remove(): Promise<void> };

beforeAll(async () => {
  server = createServer((request, response) => void answer(request, response));
  server.listen(0, "127.0.0.1");
  await once(server, "listening");
  url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  scratch = await temporaryDirectory("cli-hostile-");
});

afterAll(async () => {
  server?.close();
  await scratch?.remove();
});

async function answer(request: IncomingMessage, response: ServerResponse): Promise<void> {
  let text = "";
  for await (const chunk of request) text += chunk;
  const method = ANSWERS[request.url ?? ""];
  const { status, body } = method?.(JSON.parse(text || "{}") as { did?: string }) ?? {
    status: 500,
    body: { code: "internal", message: HOSTILE_TEXT },
  };
  response.writeHead(status, { "content-type": "application/json" }).end(JSON.stringify(body));
}

function cli(args: string[]) {
  return runCliChecked(
    args,
    childEnv({
      REGISTRY_URL: url,
      REGISTRY_CONFIG_DIR: join(scratch.path, "config"),
      REGISTRY_SIGNING_KEY: encodePrivateKey(randomBytes(32)),
    }),
  );
}

// Each case runs the CLI a few times, each a node process compiling TypeScript on start.
describe("a hostile registry's answers", { timeout: CLI_MS }, () => {
  it("resolve shows the entry's every field escaped, one per line, and --json gives it back exactly", async () => {
    const shown = await cli(["resolve", "did:reg:main:skill:x"]);
    expect(shown.code, shown.stderr).toBe(0);
    expect(linesOf(shown.stdout)).toEqual([
      `did:reg:main:skill:x${VISIBLE_TEXT}  revoked\\r  publisher   did:key:forged`,
      `  publisher   ${VISIBLE_TEXT}`,
      `  published   ${VISIBLE_TEXT}`,
      `  content     ${VISIBLE_TEXT}`,
      `  description ${VISIBLE_TEXT}`,
      "  tags        \\u001b[2J\\u001b[H\\u001b[31m, \\n  publisher   did:key:forged, \\u202etxt.exe\\u202c \\u2066isolated\\u2069 \\u202a\\u202b\\u202d",
      `  revoked     ${VISIBLE_TEXT}: ${VISIBLE_TEXT}`,
    ]);
    const json = await cli(["resolve", "did:reg:main:skill:x", "--json"]);
    expect(JSON.parse(json.stdout)).toEqual(hostileEntry);
  });

  it("versions, discover and query keep each value in its own column of its own line", async () => {
    const versions = await cli(["versions", "did:reg:main:skill:x"]);
    expect(versions.code, versions.stderr).toBe(0);
    expect(linesOf(versions.stdout).map((line) => line.split("\t"))).toEqual([[VISIBLE_TEXT, VISIBLE_TEXT.toLowerCase(), VISIBLE_TEXT]]);

    const found = await cli(["discover"]);
    expect(found.code, found.stderr).toBe(0);
    expect(linesOf(found.stdout).map((line) => line.split("\t"))).toEqual([
      [`did:reg:main:skill:x${VISIBLE_TEXT}`, "revoked\\r  publisher   did:key:forged", VISIBLE_TEXT],
    ]);
    const foundJson = await cli(["discover", "--json"]);
    expect(JSON.parse(foundJson.stdout).entries[0]).toMatchObject({
      entryDid: hostileEntry.entryDid,
      tags: hostileEntry.tags,
      data: hostileEntry.data,
    });

    const rows = await cli(["query", "SELECT entry_did FROM entries"]);
    expect(rows.code, rows.stderr).toBe(0);
    const [row, ...more] = linesOf(rows.stdout).map((line) => line.split("\t"));
    expect(more).toEqual([]);
    expect(row).toHaveLength(2);
    expect(row![0]).toBe(VISIBLE_TEXT);
    // A JSON column stays JSON: its escapes stand inside its strings, and it reads back exactly.
    expect(row![1]).toContain("\\n  publisher   did:key:forged");
    expect(JSON.parse(row![1]!)).toEqual({ [HOSTILE.lineFeed]: HOSTILE_TEXT });
    const rowsJson = await cli(["query", "SELECT entry_did FROM entries", "--json"]);
    expect(JSON.parse(rowsJson.stdout).entries).toEqual([{ [HOSTILE.tab]: HOSTILE_TEXT, data: { [HOSTILE.lineFeed]: HOSTILE_TEXT } }]);
  });

  it("login shows the token's subject and scopes escaped on one line", async () => {
    const login = await cli(["login", "--root-token", "rt_hostile"]);
    expect(login.code, login.stderr).toBe(0);
    expect(linesOf(login.stdout)).toEqual([expect.stringMatching(new RegExp(`^logged in to ${url} as .* \\(.*\\); credentials in \\S+$`))]);
    expect(login.stdout).toContain(` as ${VISIBLE_TEXT} (${VISIBLE_TEXT}); `);
    const json = await cli(["login", "--root-token", "rt_hostile", "--json"]);
    expect(JSON.parse(json.stdout)).toMatchObject({ subject: HOSTILE_TEXT, scopes: [HOSTILE_TEXT] });
  });
});

describe("a hostile registry's errors", { timeout: CLI_MS }, () => {
  it("a refusal's message and field violation are escaped, each on its line, and exact in --json", async () => {
    const refused = await cli(["resolve", REFUSED]);
    expect(refused.code).toBe(1);
    expect(refused.stdout).toBe("");
    expect(linesOf(refused.stderr)).toEqual([
      `registry: invalid_argument: ${VISIBLE_TEXT}`,
      `  tags[0]\\n  publisher   did:key:forged: ${VISIBLE_TEXT}`,
    ]);
    const json = await cli(["resolve", REFUSED, "--json"]);
    expect(JSON.parse(json.stderr)).toEqual({ error: { code: "invalid_argument", message: HOSTILE_TEXT, violations: [violation] } });
  });

  it("not-found and a failure quote the server escaped, on one line", async () => {
    const missing = await cli(["resolve", MISSING]);
    expect(missing.code).toBe(3);
    expect(missing.stderr).toBe(`registry: not_found: ${VISIBLE_TEXT}\n`);

    expect((await cli(["login", "--root-token", "rt_hostile"])).code).toBe(0);
    const manifest = join(scratch.path, "entry.json");
    await writeFile(manifest, JSON.stringify({ entryDid: "did:reg:main:skill:x@1.0.0", entryType: "skill", version: "1.0.0" }));
    const failed = await cli(["publish", manifest]);
    expect(failed.stderr).toBe(`registry: internal: ${VISIBLE_TEXT}\n`);
    expect(failed.code).toBe(5);
  });
});

it("the command line's own words are escaped in a usage error", { timeout: CLI_MS }, async () => {
  const result = await cli(["resolve", "did:reg:main:skill:x", `--${HOSTILE.clipboard}`]);
  expect(result.code).toBe(2);
  expect(result.stderr).toContain("\\u001b]52;c;");
});
