import { randomBytes } from "node:crypto";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createCursorCodec } from "../../src/discovery/page-cursor.js";
import { startPublishingRegistry, type PublishingSetup, type TestRegistry } from "../support/registry-fixture.js";
import { PROTOCOLS, registryClient, type CallResult, type Protocol } from "../support/protocol-clients.js";
import { expectClientError, timed } from "./client-error.js";

/**
 * Discovery input built to hurt: pathological query-language text (4 KiB of parentheses, too many
 * predicates, LIKE patterns made of wildcards over long text, regular-expression syntax the
 * language does not have, unterminated strings, numbers no double holds) and page cursors that
 * were tampered with, cut, taken from another query, or are not cursors at all. Each is
 * invalid_argument (query errors with the line and column of the fault), never a server error,
 * and answered within BOUND_MS on every protocol; the controls show the limits' edges still work.
 */

/** Every answer comes well within this; typical answers take milliseconds, so the margin is wide. */
const BOUND_MS = 2_000;
const MAX_QUERY_BYTES = 4096;
const LONG_TEXT_ENTRIES = 24;

let setup: PublishingSetup;
let registry: TestRegistry;

beforeAll(async () => {
  setup = await startPublishingRegistry(["registry.publish.skill"]);
  const { publisher, token } = setup;
  registry = setup.registry;
  const client = registryClient("rest", registry.url);
  // Long texts of one letter are what wildcard-heavy LIKE patterns backtrack over longest.
  for (let index = 0; index < LONG_TEXT_ENTRIES; index++) {
    const entry = await publisher.entry(`ql-abuse-${index}`, "1.0.0", {
      description: "a".repeat(2000),
      tags: [`t${index % 4}`],
      data: { level: { deeper: { text: "a".repeat(1000), n: index } } },
    });
    const created = await client.create(entry, token);
    expect(created.code, created.message).toBe("ok");
  }
});

afterAll(async () => {
  await setup?.close();
});

async function callWithin(
  protocol: Protocol,
  call: (client: ReturnType<typeof registryClient>) => Promise<CallResult>,
): Promise<CallResult> {
  const client = registryClient(protocol, registry.url);
  try {
    const { result, ms } = await timed(() => call(client));
    expect(ms, `answered in ${Math.round(ms)} ms`).toBeLessThan(BOUND_MS);
    return result;
  } finally {
    client.close();
  }
}

const WHERE = "SELECT entry_did FROM entries WHERE ";
/** A query of exactly `bytes` bytes: `head`, then `fill` repeated, then `tail`. */
function sized(head: string, fill: string, tail: string, bytes = MAX_QUERY_BYTES): string {
  const count = Math.floor((bytes - head.length - tail.length) / fill.length);
  return head + fill.repeat(count) + tail;
}
const predicates = (count: number, joiner = " OR ") => WHERE + Array.from({ length: count }, (_, i) => `name = 'p${i}'`).join(joiner);
const nested = (depth: number) => `${WHERE}${"(".repeat(depth)}name = 'x'${")".repeat(depth)}`;

interface QueryCase {
  readonly label: string;
  readonly query: string;
  /** The query is refused with a position (the default), refused as a whole (its size), or runs. */
  readonly outcome?: "refused at a position" | "refused whole" | "runs";
}

const QUERY_CASES: readonly QueryCase[] = [
  // Shape and limits. Lists, paths and orderings are bounded by the query's 4 KiB alone.
  { label: "4 KiB of opening parentheses", query: sized(WHERE, "(", "") },
  { label: "4 KiB of balanced parentheses", query: `${sized(WHERE, "(", "", 2000)}name = 'x'${")".repeat(2000 - WHERE.length)}` },
  { label: "4 KiB of closing parentheses", query: sized(WHERE, ")", "") },
  {
    label: "a query of 4 KiB and one byte",
    query: sized(`${WHERE}description = '`, "a", "'", MAX_QUERY_BYTES + 1),
    outcome: "refused whole",
  },
  { label: "a query of 200 KiB", query: WHERE + "a".repeat(200 * 1024), outcome: "refused whole" },
  { label: "65 predicates", query: predicates(65) },
  { label: "64 predicates (control)", query: predicates(64), outcome: "runs" },
  { label: "nesting of 17 parentheses", query: nested(17) },
  { label: "nesting of 16 parentheses (control)", query: nested(16), outcome: "runs" },
  { label: "1,000 NOTs", query: sized(WHERE, "NOT ", "name = 'x'") },
  { label: "an IN list of a thousand values", query: sized(`${WHERE}name IN (`, "'x',", "'x')"), outcome: "runs" },
  { label: "a data path of a thousand keys", query: sized(`${WHERE}data`, ".a", " = 1"), outcome: "runs" },
  {
    label: "ORDER BY the same column 500 times",
    query: sized("SELECT entry_did FROM entries ORDER BY name", ", name", ""),
    outcome: "runs",
  },
  { label: "every column, 400 times", query: sized("SELECT name", ", name", " FROM entries"), outcome: "runs" },
  // Wildcards and regular-expression syntax.
  { label: "a LIKE pattern of 4,000 %", query: sized(`${WHERE}description LIKE '`, "%", "'"), outcome: "runs" },
  {
    label: "a LIKE pattern of %a repeated, over 2,000-letter texts",
    query: sized(`${WHERE}description LIKE '`, "%a", "%b'"),
    outcome: "runs",
  },
  {
    label: "a LIKE pattern of %a repeated, over data texts",
    query: sized(`${WHERE}data.level.deeper.text LIKE '`, "%a", "%b'"),
    outcome: "runs",
  },
  { label: "a LIKE pattern of 4,000 _", query: sized(`${WHERE}description LIKE '`, "_", "'"), outcome: "runs" },
  { label: "a NOT LIKE of %_ repeated", query: sized(`${WHERE}description NOT LIKE '`, "%_", "b'"), outcome: "runs" },
  { label: "a CONTAINS of 4,000 % (literal, not a wildcard)", query: sized(`${WHERE}description CONTAINS '`, "%", "'"), outcome: "runs" },
  { label: "a LIKE pattern ending in the escape character", query: `${WHERE}description LIKE 'a\\'` },
  { label: "a LIKE pattern of backslashes", query: sized(`${WHERE}description LIKE '`, "\\\\", "'"), outcome: "runs" },
  { label: "a regular-expression operator", query: `${WHERE}name ~ 'a.*'` },
  { label: "SIMILAR TO", query: `${WHERE}name SIMILAR TO '(a|b)*'` },
  { label: "REGEXP", query: `${WHERE}name REGEXP '^(a+)+$'` },
  {
    label: "a catastrophic-backtracking regex as a LIKE pattern (literal characters)",
    query: `${WHERE}description LIKE '(a+)+$'`,
    outcome: "runs",
  },
  // Strings.
  { label: "an unterminated string", query: `${WHERE}name = 'abc` },
  { label: "an unterminated string of doubled quotes", query: sized(`${WHERE}name = '`, "''", "") },
  { label: "4 KiB of quotes", query: sized(WHERE, "'", "") },
  { label: "a double-quoted string", query: `${WHERE}name = "abc"` },
  { label: "a string across lines, unterminated", query: `${WHERE}name = 'a\nb\nc` },
  // Numbers.
  { label: "1e999", query: `${WHERE}sequence > 1e999` },
  { label: "-1e999", query: `${WHERE}sequence > -1e999` },
  { label: "a 400-digit number", query: `${WHERE}sequence > ${"9".repeat(400)}` },
  { label: "1e-999", query: `${WHERE}data.level.deeper.n > 1e-999` },
  { label: "-0 (control)", query: `${WHERE}data.level.deeper.n > -0`, outcome: "runs" },
  { label: "0x10", query: `${WHERE}sequence > 0x10` },
  { label: "1_000", query: `${WHERE}sequence > 1_000` },
  { label: "a number with two dots", query: `${WHERE}sequence > 1.2.3` },
  { label: "1e", query: `${WHERE}sequence > 1e` },
  { label: "NaN", query: `${WHERE}data.level.deeper.n = NaN` },
  { label: "Infinity", query: `${WHERE}data.level.deeper.n < Infinity` },
  { label: "LIMIT past 10,000", query: "SELECT entry_did FROM entries LIMIT 10001" },
  { label: "LIMIT of 30 digits", query: `SELECT entry_did FROM entries LIMIT ${"9".repeat(30)}` },
  { label: "LIMIT -1", query: "SELECT entry_did FROM entries LIMIT -1" },
  { label: "LIMIT 1e3", query: "SELECT entry_did FROM entries LIMIT 1e3" },
  // SQL that is not the language.
  { label: "a block comment", query: `${WHERE}name = 'x' /* comment */` },
  { label: "an unterminated block comment", query: `${WHERE}name = 'x' /*` },
  { label: "a line comment", query: `${WHERE}name = 'x' -- comment` },
  { label: "a second statement", query: `${WHERE}name = 'x'; DROP TABLE entries` },
  { label: "two semicolons", query: "SELECT entry_did FROM entries;;" },
  { label: "a UNION", query: "SELECT entry_did FROM entries UNION SELECT name FROM entries" },
  { label: "a subquery", query: `${WHERE}name IN (SELECT name FROM entries)` },
  { label: "another table", query: "SELECT * FROM root_tokens" },
  { label: "a function call", query: `${WHERE}pg_sleep(10) IS NULL` },
  { label: "a trailing dot in a data path", query: `${WHERE}data. = 1` },
  { label: "an empty data key", query: `${WHERE}data..a = 1` },
  // Odd characters.
  { label: "a non-breaking space between words", query: "SELECT\u00a0entry_did FROM entries" },
  { label: "a line separator (U+2028)", query: "SELECT entry_did\u2028FROM entries WHERE" },
  { label: "a non-ASCII column", query: `${WHERE}nämé = 'x'` },
  { label: "an emoji", query: `${WHERE}name = 'x' \u{1F600}` },
  { label: "only whitespace", query: " \t\r\n " },
  { label: "SELECT alone", query: "SELECT" },
];

describe.each(PROTOCOLS)("pathological queries over %s", (protocol) => {
  it.each(QUERY_CASES)("$label", async ({ query, outcome }) => {
    const result = await callWithin(protocol, (client) => client.query({ query, limit: 5 }));
    if (outcome === "runs") {
      expect(result.code, result.message).toBe("ok");
      return;
    }
    expectClientError(result, "invalid_argument");
    expect(result.fields).toContain("query");
    if (outcome === "refused whole") expect(result.message).toMatch(/4 KiB/);
    else expect(result.message).toMatch(/line \d+, column \d+/);
  });
});

describe("query errors name the line and column of the fault", () => {
  it.each([
    ["a fault on the third line, after CRLF", "SELECT entry_did\r\nFROM entries\r\nWHERE name = = 'x'", "line 3, column 14"],
    ["a fault after a tab", "SELECT entry_did FROM entries WHERE\tname ~ 'x'", "line 1, column 42"],
    ["a fault after non-ASCII text in a string", "SELECT entry_did FROM entries WHERE name = 'é' AND", "line 1, column 51"],
    ["an unterminated string, at its opening quote", "SELECT entry_did FROM entries\nWHERE name = 'abc", "line 2, column 14"],
  ])("%s", async (_label, query, position) => {
    const result = await callWithin("rest", (client) => client.query({ query }));
    expectClientError(result, "invalid_argument");
    expect(result.message).toContain(position);
  });
});

/** A real cursor of `query` (the first page's nextCursor). */
async function cursorOf(body: Record<string, unknown>, kind: "query" | "discover" = "query"): Promise<string> {
  const client = registryClient("rest", registry.url);
  const page = kind === "query" ? await client.query(body) : await client.discover(body);
  expect(page.code, page.message).toBe("ok");
  expect(typeof page.body.nextCursor).toBe("string");
  return page.body.nextCursor as string;
}

const PAGED = { query: "SELECT entry_did FROM entries ORDER BY name", limit: 3 };
const PAGED_DISCOVER = { conditions: [{ field: "tags", op: "CONTAINS", value: "t1" }], limit: 2 };
const flip = (text: string, index: number) => `${text.slice(0, index)}${text[index] === "A" ? "B" : "A"}${text.slice(index + 1)}`;

interface CursorCase {
  readonly label: string;
  readonly cursor: () => Promise<string> | string;
  /** The request the cursor is sent with: the query it belongs to unless said otherwise. */
  readonly with?: "query" | "other query" | "discover";
}

const CURSOR_CASES: readonly CursorCase[] = [
  {
    label: "a byte changed in its middle",
    cursor: async () => {
      const c = await cursorOf(PAGED);
      return flip(c, Math.floor(c.length / 2));
    },
  },
  {
    label: "a byte changed in its signature",
    cursor: async () => {
      const c = await cursorOf(PAGED);
      return flip(c, c.length - 5);
    },
  },
  { label: "a byte changed in its first character", cursor: async () => flip(await cursorOf(PAGED), 0) },
  { label: "truncated by ten characters", cursor: async () => (await cursorOf(PAGED)).slice(0, -10) },
  {
    label: "truncated to half",
    cursor: async () => {
      const c = await cursorOf(PAGED);
      return c.slice(0, c.length / 2);
    },
  },
  {
    label: "doubled",
    cursor: async () => {
      const c = await cursorOf(PAGED);
      return c + c;
    },
  },
  { label: "with base64 padding", cursor: async () => `${await cursorOf(PAGED)}==` },
  { label: "with a trailing newline", cursor: async () => `${await cursorOf(PAGED)}\n` },
  { label: "in standard base64", cursor: async () => Buffer.from(await cursorOf(PAGED), "base64url").toString("base64") },
  { label: "from another query", cursor: () => cursorOf({ query: "SELECT entry_did FROM entries WHERE tags CONTAINS 't1'", limit: 2 }) },
  { label: "from the same query with another LIMIT", cursor: () => cursorOf({ query: `${PAGED.query} LIMIT 50`, limit: 3 }) },
  { label: "from structured discovery", cursor: () => cursorOf(PAGED_DISCOVER, "discover") },
  { label: "a query cursor sent to structured discovery", cursor: () => cursorOf(PAGED), with: "discover" },
  { label: "sent with another query", cursor: () => cursorOf(PAGED), with: "other query" },
  { label: "base64 garbage", cursor: () => Buffer.from("this is not a cursor at all, only some text").toString("base64url") },
  { label: "punctuation", cursor: () => "!!!!$$$$" },
  { label: "a single character", cursor: () => "A" },
  { label: "a JSON text", cursor: () => JSON.stringify({ position: [1], remaining: 5 }) },
  {
    label: "well-formed, signed with another registry's secret",
    cursor: () => createCursorCodec({ secret: randomBytes(32) }).encode({ binding: "another registry", position: ["ql-abuse-3", "10"] }),
  },
  { label: "64 KiB and one character", cursor: () => "A".repeat(64 * 1024 + 1) },
  { label: "200 KiB", cursor: () => "A".repeat(200 * 1024) },
  { label: "non-ASCII", cursor: () => "curseur-é" },
];

describe.each(PROTOCOLS)("cursors over %s", (protocol) => {
  it.each(CURSOR_CASES)("refuses a cursor $label", async ({ cursor, with: sentWith }) => {
    const value = await cursor();
    const result = await callWithin(protocol, (client) => {
      if (sentWith === "discover") return client.discover({ ...PAGED_DISCOVER, cursor: value });
      if (sentWith === "other query")
        return client.query({ query: "SELECT entry_did FROM entries ORDER BY sequence", limit: 3, cursor: value });
      return client.query({ ...PAGED, cursor: value });
    });
    expectClientError(result, "invalid_argument");
    expect(result.fields).toContain("cursor");
  });

  it("follows a genuine cursor, also with another page size (control)", async () => {
    const cursor = await cursorOf(PAGED);
    const result = await callWithin(protocol, (client) => client.query({ ...PAGED, limit: 7, cursor }));
    expect(result.code, result.message).toBe("ok");
    expect(result.body.entries).toHaveLength(7);
  });
});
