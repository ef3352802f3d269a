import { randomBytes } from "node:crypto";
import { writeFile } from "node:fs/promises";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { encodePrivateKey, keyPairFromSeed } from "../../src/sdk/index.js";
import { childEnv, temporaryDirectory } from "../support/child-processes.js";
import { startRegistryOnFreshDatabase, type FreshRegistry } from "../support/registry-fixture.js";
import { usesPostgres, seededDataDirectory } from "../support/test-database.js";
import { HOSTILE, HOSTILE_TEXT, linesOf, runCliChecked, VISIBLE_TEXT } from "./cli-terminal-bytes.js";

/**
 * A publisher's text, stored by a real registry, reaches every reader's terminal through the CLI:
 * a description, data and a revocation reason carrying escape sequences, an OSC 52 clipboard
 * write, CR and LF that would draw a forged line, bidi overrides and C1 controls. Every command
 * that shows them prints them escaped, one value per line and column, and with --json gives them
 * back exactly.
 */

const CLI_MS = 120_000;
let fresh: FreshRegistry;
let scratch: { path: string; remove(): Promise<void> };
let keyText: string;
let publisherDid: string;
const name = `hostile-${randomBytes(4).toString("hex")}`;
const did = `did:reg:main:skill:${name}@1.0.0`;
const contentHash = `sha256:${"cd".repeat(32)}`;
const data = { note: HOSTILE_TEXT, [HOSTILE.clipboard]: [HOSTILE.screen, HOSTILE.bidi] };

beforeAll(async () => {
  fresh = await startRegistryOnFreshDatabase({ logIntegrateMs: 50 });
  scratch = await temporaryDirectory("cli-terminal-");
  const seed = randomBytes(32);
  keyText = encodePrivateKey(seed);
  publisherDid = (await keyPairFromSeed(seed)).did;
  const rootToken = await fresh.registry.rootToken(publisherDid, ["registry.publish.skill"]);
  const login = await cli(["login", "--root-token", rootToken]);
  expect(login.code, login.stderr).toBe(0);
}, CLI_MS);

afterAll(async () => {
  await fresh?.close();
  await scratch?.remove();
});

function cli(args: string[], overrides: Record<string, string | undefined> = {}) {
  return runCliChecked(
    args,
    childEnv({
      REGISTRY_URL: fresh.registry.url,
      REGISTRY_CONFIG_DIR: join(scratch.path, "config"),
      REGISTRY_SIGNING_KEY: keyText,
      ...overrides,
    }),
  );
}

// Each case runs the CLI a few times, each a node process compiling TypeScript on start.
describe("an entry whose description and data carry terminal controls", { timeout: CLI_MS }, () => {
  it("is published, and --json gives back the exact values", async () => {
    const manifest = join(scratch.path, "registry.json");
    await writeFile(
      manifest,
      JSON.stringify({ entryDid: did, entryType: "skill", version: "1.0.0", description: HOSTILE_TEXT, tags: [name], data, contentHash }),
    );
    const published = await cli(["publish", manifest, "--json"]);
    expect(published.code, published.stderr).toBe(0);
    expect(JSON.parse(published.stdout)).toMatchObject({ entryDid: did, description: HOSTILE_TEXT, data });
  });

  it("resolve shows them escaped on their own lines, and no forged publisher line", async () => {
    const resolved = await cli(["resolve", did]);
    expect(resolved.code, resolved.stderr).toBe(0);
    expect(linesOf(resolved.stdout)).toEqual([
      `${did}  active`,
      `  publisher   ${publisherDid}`,
      expect.stringMatching(/^ {2}published {3}\S+$/),
      `  content     ${contentHash}`,
      `  description ${VISIBLE_TEXT}`,
      `  tags        ${name}`,
    ]);
    const json = await cli(["resolve", did, "--json"]);
    expect(JSON.parse(json.stdout)).toMatchObject({ description: HOSTILE_TEXT, data });
  });

  it("discover prints one line of three columns, and --json gives back the exact values", async () => {
    const found = await cli(["discover", "--tag", name]);
    expect(found.code, found.stderr).toBe(0);
    expect(linesOf(found.stdout).map((line) => line.split("\t"))).toEqual([[did, "active", VISIBLE_TEXT]]);
    const json = await cli(["discover", "--tag", name, "--json"]);
    expect(JSON.parse(json.stdout).entries).toMatchObject([{ description: HOSTILE_TEXT, data }]);
  });

  it("query prints one row of the selected columns, and --json gives back the exact values", async () => {
    const ql = `SELECT entry_did, description, data.note FROM entries WHERE name = '${name}'`;
    const rows = await cli(["query", ql]);
    expect(rows.code, rows.stderr).toBe(0);
    const [row, ...more] = linesOf(rows.stdout).map((line) => line.split("\t"));
    expect(more).toEqual([]);
    expect(row).toHaveLength(3);
    expect(row!.slice(0, 2)).toEqual([did, VISIBLE_TEXT]);
    // A JSON column stays JSON: its escapes stand inside its strings, and it reads back exactly.
    expect(row![2]).toContain("\\n  publisher   did:key:forged");
    expect(JSON.parse(row![2]!)).toEqual({ note: HOSTILE_TEXT });
    const json = await cli(["query", ql, "--json"]);
    expect(JSON.parse(json.stdout).entries).toEqual([{ entryDid: did, description: HOSTILE_TEXT, data: { note: HOSTILE_TEXT } }]);
  });

  it("a hostile revocation reason shows escaped in resolve and verify, and exactly in --json", async () => {
    const revoked = await cli(["revoke", did, "--reason", HOSTILE_TEXT]);
    expect(revoked.code, revoked.stderr).toBe(0);
    expect(revoked.stdout).toBe(`revoked ${did}\n`);

    const resolved = await cli(["resolve", did]);
    const lines = linesOf(resolved.stdout);
    expect(lines[0]).toBe(`${did}  revoked`);
    expect(lines.filter((line) => line.startsWith("  publisher"))).toEqual([`  publisher   ${publisherDid}`]);
    expect(lines.at(-1)).toMatch(new RegExp(`^ {2}revoked {5}\\S+: ${escapeRegExp(VISIBLE_TEXT)}$`));
    expect(JSON.parse((await cli(["resolve", did, "--json"])).stdout).revocationReason).toBe(HOSTILE_TEXT);

    await waitForLogSize(2);
    const verified = await cli(["verify", did]);
    expect(verified.code, verified.stderr).toBe(0);
    expect(linesOf(verified.stdout)[0]).toBe(`verified ${did} (revoked: ${VISIBLE_TEXT})`);
    const json = await cli(["verify", did, "--json"]);
    // The record as the API serves it: its exact text, which holds the reason exactly.
    expect(JSON.parse(JSON.parse(json.stdout).record).entry.revocationReason).toBe(HOSTILE_TEXT);

    // The timeline keeps five columns on one line per record, the reason escaped in the last.
    const history = await cli(["history", did]);
    expect(history.code, history.stderr).toBe(0);
    const timeline = linesOf(history.stdout);
    expect(timeline).toHaveLength(2);
    expect(timeline.map((line) => line.split("\t").length)).toEqual([5, 5]);
    expect(timeline[1]!.split("\t")[4]).toBe(`revoked ${did.split("@")[1]}: ${VISIBLE_TEXT}`);
  });

  it("a hostile deprecation reason shows escaped in resolve's lines and its notices on stderr, and exactly in --json", async () => {
    // A revoked version may still be deprecated (docs/lifecycle.md).
    const deprecated = await cli(["deprecate", did, "--reason", HOSTILE_TEXT, "--json"]);
    expect(deprecated.code, deprecated.stderr).toBe(0);
    expect(JSON.parse(deprecated.stdout).entries).toMatchObject([
      { entryDid: did, status: "revoked", deprecation: { reason: HOSTILE_TEXT } },
    ]);

    const resolved = await cli(["resolve", did]);
    expect(resolved.code, resolved.stderr).toBe(0);
    const lines = linesOf(resolved.stdout);
    expect(lines.filter((line) => line.startsWith("  publisher"))).toEqual([`  publisher   ${publisherDid}`]);
    expect(lines.slice(-2).map((line) => line.replace(/^( {2}\w+ +)\S+: /, "$1"))).toEqual([
      `  deprecated  ${VISIBLE_TEXT}`,
      `  revoked     ${VISIBLE_TEXT}`,
    ]);
    expect(linesOf(resolved.stderr)).toEqual([
      `registry: ${did} is deprecated: ${VISIBLE_TEXT}`,
      `registry: ${did} is revoked: ${VISIBLE_TEXT}`,
    ]);
  });
});

it(
  "root-token list shows a description with terminal controls escaped, in its own column",
  async () => {
    const dataDir = usesPostgres() ? undefined : await seededDataDirectory("cli-terminal-root-");
    const env = dataDir === undefined ? { DATABASE_URL: fresh.db.url } : { REGISTRY_DATA_DIR: dataDir.path };
    try {
      const created = await cli(
        ["root-token", "create", "--subject", publisherDid, "--scopes", "registry.publish.skill", "--description", HOSTILE_TEXT],
        env,
      );
      expect(created.code, created.stderr).toBe(0);
      const listed = await cli(["root-token", "list"], env);
      expect(listed.code, listed.stderr).toBe(0);
      const rows = linesOf(listed.stdout);
      expect(rows[0]).toMatch(/^ID +SUBJECT +SCOPES +CREATED +REVOKED +DESCRIPTION$/);
      expect(rows.filter((row) => row.endsWith(VISIBLE_TEXT))).toHaveLength(1);
      expect(rows.filter((row) => row.includes("did:key:forged"))).toHaveLength(1);
      const json = await cli(["root-token", "list", "--json"], env);
      expect(JSON.parse(json.stdout).rootTokens.map((record: { description: string }) => record.description)).toContain(HOSTILE_TEXT);
    } finally {
      await dataDir?.remove();
    }
  },
  CLI_MS,
);

async function waitForLogSize(size: number): Promise<void> {
  for (let attempt = 0; attempt < 400; attempt++) {
    const checkpoint = await fetch(`${fresh.registry.url}/v1/log/checkpoint`);
    if (checkpoint.status === 200 && Number(((await checkpoint.json()) as { treeSize: string }).treeSize) >= size) return;
    await new Promise((resolve) => setTimeout(resolve, 25));
  }
  throw new Error(`the log did not reach ${size} records`);
}

function escapeRegExp(text: string): string {
  return text.replace(/[.*+?^${}()|[\]\\]/g, "\\$&");
}
