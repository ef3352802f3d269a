import { existsSync, readdirSync, readFileSync } from "node:fs";
import { dirname, join, normalize } from "node:path";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";

/**
 * Every repository path that README.md and docs/*.md name exists, and every link between them lands
 * on a file and, when it names one, a heading; so does every `docs/<page>.md#<section>` a comment in
 * src/ or bench/ links. A doc that names a moved or deleted file fails here, with the doc, the line
 * and the path.
 */

const REPO = fileURLToPath(new URL("../../", import.meta.url));

/** Top-level folders whose paths a doc may name in its prose, code spans or code blocks. */
const ROOTS = ["src", "test", "bench", "docs", "proto", "bin", ".ci", "deploy", "gen"];

/** A root folder's path, perhaps after `./`, not inside a word, a URL or a longer path. */
const ROOTED_PATH = new RegExp(`(?<![\\w./-])(?:\\./)?(?:${ROOTS.map((root) => root.replace(".", "\\.")).join("|")})/[\\w.@*<>{}/-]*`, "g");

/** `[text](target)`: a Markdown link's target, up to a space or the closing parenthesis. */
const LINK = /\]\(([^)\s]+)\)/g;

/** Where a pattern or placeholder starts; the path is checked up to the folder before it. */
const WILDCARD = /[*<>{}]/;

interface NamedPath {
  readonly line: number;
  /** Repository-relative, without an anchor. */
  readonly path: string;
  /** The heading a link names (`#anchor`), if any. */
  readonly anchor: string | undefined;
}

interface Problem {
  readonly doc: string;
  readonly line: number;
  readonly path: string;
  readonly problem: "missing" | "no such heading";
}

/** Paths .gitignore keeps out of the repository (run outputs such as bench/results/): named, never committed. */
function ignoredPrefixes(): string[] {
  return readFileSync(join(REPO, ".gitignore"), "utf8")
    .split("\n")
    .map((line) => line.trim().replace(/^\//, ""))
    .filter((line) => ROOTS.some((root) => line.startsWith(`${root}/`)));
}

/** The part of a path a reader can look up: no placeholder, pattern or trailing punctuation. */
function checkablePath(token: string): string {
  const wildcard = token.search(WILDCARD);
  const literal = wildcard < 0 ? token : token.slice(0, token.lastIndexOf("/", wildcard) + 1);
  return literal.replace(/^\.\//, "").replace(/[.,:;]+$/, "");
}

/** The paths and links in one Markdown document, with their line numbers; `doc` is repository-relative. */
function namedPaths(markdown: string, doc: string): NamedPath[] {
  const named: NamedPath[] = [];
  markdown.split("\n").forEach((text, index) => {
    const line = index + 1;
    const onLine: (NamedPath & { column: number })[] = [];
    for (const match of text.matchAll(ROOTED_PATH))
      onLine.push({ line, column: match.index, path: checkablePath(match[0]), anchor: undefined });
    for (const match of text.matchAll(LINK)) {
      const target = match[1]!;
      if (/^[a-z][a-z+.-]*:/i.test(target)) continue;
      const [file = "", anchor] = target.split("#");
      const path = file === "" ? doc : normalize(join(dirname(doc), decodeURIComponent(file)));
      onLine.push({ line, column: match.index + 2, path: path.replace(/\/$/, ""), anchor });
    }
    onLine.sort((a, b) => a.column - b.column);
    named.push(...onLine.map(({ column: _column, ...path }) => path));
  });
  return named;
}

/** GitHub's anchor for a heading: lower case, punctuation dropped, spaces as hyphens; repeats numbered. */
function headingAnchors(markdown: string): Set<string> {
  const anchors = new Set<string>();
  let fenced = false;
  for (const text of markdown.split("\n")) {
    if (/^\s*(```|~~~)/.test(text)) fenced = !fenced;
    const heading = fenced ? null : /^#{1,6}\s+(.*?)\s*#*\s*$/.exec(text);
    if (heading === null) continue;
    const base = heading[1]!
      .toLowerCase()
      .replace(/[^\p{L}\p{N}\s_-]/gu, "")
      .replace(/\s/g, "-");
    let anchor = base;
    for (let repeat = 1; anchors.has(anchor); repeat++) anchor = `${base}-${repeat}`;
    anchors.add(anchor);
  }
  return anchors;
}

/** What a document names that the repository does not hold. */
function problemsIn(markdown: string, doc: string): Problem[] {
  const ignored = ignoredPrefixes();
  const problems = new Map<string, Problem>();
  const report = (problem: Problem) => problems.set(`${problem.line} ${problem.path}`, problem);
  for (const { line, path, anchor } of namedPaths(markdown, doc)) {
    if (ignored.some((prefix) => path.startsWith(prefix))) continue;
    if (!existsSync(join(REPO, path))) {
      report({ doc, line, path, problem: "missing" });
      continue;
    }
    if (anchor === undefined || anchor === "" || !path.endsWith(".md")) continue;
    if (!headingAnchors(readFileSync(join(REPO, path), "utf8")).has(anchor)) {
      report({ doc, line, path: `${path}#${anchor}`, problem: "no such heading" });
    }
  }
  return [...problems.values()];
}

const DOCS = [
  "README.md",
  ...readdirSync(join(REPO, "docs"))
    .filter((name) => name.endsWith(".md"))
    .map((name) => `docs/${name}`),
];

describe("paths named in the docs", () => {
  it.each(DOCS)("%s names only files that exist", (doc) => {
    expect(problemsIn(readFileSync(join(REPO, doc), "utf8"), doc)).toEqual([]);
  });

  it("reads every doc it is meant to", () => {
    expect(DOCS).toEqual(expect.arrayContaining(["README.md", "docs/architecture.md", "docs/performance.md"]));
  });
});

/** A source file's links to a doc's section, `docs/performance.md#creates`. */
const SECTION_LINK = /docs\/[\w.-]+\.md#[\w-]+/g;

/** The links to doc sections in one source file's text that name no heading, as `file:line link`. */
function brokenSectionLinks(source: string, file: string): string[] {
  const broken: string[] = [];
  source.split("\n").forEach((text, index) => {
    for (const [link] of text.matchAll(SECTION_LINK)) {
      const [doc = "", anchor = ""] = link.split("#");
      const found = existsSync(join(REPO, doc)) && headingAnchors(readFileSync(join(REPO, doc), "utf8")).has(anchor);
      if (!found) broken.push(`${file}:${index + 1} ${link}`);
    }
  });
  return broken;
}

const SOURCES = ["src", "bench"].flatMap((folder) =>
  readdirSync(join(REPO, folder), { recursive: true, encoding: "utf8" })
    .filter((file) => file.endsWith(".ts"))
    .map((file) => `${folder}/${file}`),
);

describe("sections the code links", () => {
  it("exist", () => {
    expect(SOURCES.flatMap((file) => brokenSectionLinks(readFileSync(join(REPO, file), "utf8"), file))).toEqual([]);
  });

  it("are found broken when they name no heading", () => {
    const source = "// Why: docs/performance.md#creates.\n// And docs/performance.md#no-such-section, docs/gone.md#intro.";
    expect(brokenSectionLinks(source, "src/sample.ts")).toEqual([
      "src/sample.ts:2 docs/performance.md#no-such-section",
      "src/sample.ts:2 docs/gone.md#intro",
    ]);
  });
});

describe("the check itself", () => {
  const sample = [
    "The server starts in `src/app.ts` and `node bin/run-ts.js bench/no-such-bench.ts` measures it.",
    "See [the feed](docs/feed.md), [a gone page](docs/gone.md) and src/edge/no-such-file.ts.",
    "The domain is `src/domain/*.ts`; tests live in `test/<area>/`; run `./bin/no-such-script.js`.",
    "A URL is not a path: https://example.com/src/missing.ts, nor is `GET /docs/missing`.",
    "[Anchors are checked](docs/performance.md#no-such-section), [and found](README.md#walkthrough).",
  ].join("\n");

  it("names each missing file, with its line", () => {
    expect(problemsIn(sample, "README.md")).toEqual([
      { doc: "README.md", line: 1, path: "bench/no-such-bench.ts", problem: "missing" },
      { doc: "README.md", line: 2, path: "docs/gone.md", problem: "missing" },
      { doc: "README.md", line: 2, path: "src/edge/no-such-file.ts", problem: "missing" },
      { doc: "README.md", line: 3, path: "bin/no-such-script.js", problem: "missing" },
      { doc: "README.md", line: 5, path: "docs/performance.md#no-such-section", problem: "no such heading" },
    ]);
  });

  it("resolves a link from the document's own folder", () => {
    expect(namedPaths("[limits](operations.md#limits) and [code](../src/app.ts)", "docs/api.md")).toEqual([
      { line: 1, path: "docs/operations.md", anchor: "limits" },
      { line: 1, path: "src/app.ts", anchor: undefined },
    ]);
  });

  it("makes GitHub's anchors, ignoring headings inside code blocks", () => {
    const anchors = headingAnchors("# Set up\n## Every protocol under one generator (issue 8)\n```sh\n# not a heading\n```\n## Set up\n");
    expect([...anchors]).toEqual(["set-up", "every-protocol-under-one-generator-issue-8", "set-up-1"]);
  });

  it("skips what .gitignore keeps out of the repository", () => {
    expect(problemsIn("Runs write `bench/results/no-such-run.json`.", "README.md")).toEqual([]);
  });
});
