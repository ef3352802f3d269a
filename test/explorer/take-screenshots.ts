import { execFileSync } from "node:child_process";
import { mkdir } from "node:fs/promises";
import { fileURLToPath } from "node:url";
import { createRegistryClient } from "../../src/sdk/node.js";
import { checkpointReaches } from "../mirror/mirror-fixture.js";
import { startPublishingRegistry } from "../support/registry-fixture.js";
import { launchChromium } from "./explorer-browser.js";

/**
 * The screenshots in docs/ (docs/explorer.md, README.md): a registry on an in-memory database with
 * a few sample entries, one deprecated and one yanked version among them, photographed in Chromium.
 * Run by bin/explorer-screenshots.js.
 */

const DOCS = fileURLToPath(new URL("../../docs/", import.meta.url));
const NAME = "did:reg:main:skill:web-search";

const SAMPLES = [
  {
    name: "web-search",
    version: "1.0.0",
    description: "Searches the web and returns ranked results with snippets.",
    tags: ["search", "web"],
  },
  {
    name: "web-search",
    version: "1.1.0",
    description: "Searches the web and returns ranked results with snippets.",
    tags: ["search", "web"],
  },
  {
    name: "web-search",
    version: "2.0.0",
    description: "Searches the web, news and images; returns ranked results.",
    tags: ["search", "web", "news"],
  },
  { name: "pdf-reader", version: "0.3.1", description: "Extracts text, tables and metadata from PDF files.", tags: ["pdf", "documents"] },
  { name: "calendar-sync", version: "1.2.0", description: "Keeps two calendars in step, both ways.", tags: ["calendar"] },
  { name: "web-scraper", version: "0.9.0", description: "Fetches pages and extracts their main text.", tags: ["web", "html"] },
  {
    name: "news-digest",
    version: "2.1.0",
    description: "Summarises the day's news from the web in five lines.",
    tags: ["news", "summary"],
  },
];

// Built before the registry starts: it reads the page it serves at start.
execFileSync(process.execPath, [fileURLToPath(new URL("../../bin/build.js", import.meta.url)), "--if-stale"], { stdio: "inherit" });
const setup = await startPublishingRegistry(["registry.publish.skill"]);
try {
  const client = createRegistryClient({ baseUrl: setup.registry.url, auth: setup.token });
  const key = setup.publisher.keys;
  for (const sample of SAMPLES) {
    await client.publish(
      {
        entryDid: `did:reg:main:skill:${sample.name}@${sample.version}`,
        entryType: "skill",
        version: sample.version,
        publisherDid: key.did,
        publishedAt: new Date(Math.floor(Date.now() / 1000) * 1000).toISOString(),
        description: sample.description,
        tags: sample.tags,
        license: "Apache-2.0",
        contentHash: `sha256:${"ab".repeat(32)}`,
      },
      { key },
    );
  }
  await client.changeLifecycle(`${NAME}@1.1.0`, "deprecate", { key, reason: "2.0 searches news too", replacement: `${NAME}@2.0.0` });
  await client.changeLifecycle(`${NAME}@1.0.0`, "yank", { key, reason: "returned empty results for quoted phrases" });
  client.close();
  await checkpointReaches(setup.registry.url, SAMPLES.length + 2);

  const browser = await launchChromium();
  const shots: [string, string, number][] = [
    ["home", "/", 1100],
    ["search", "/search?q=web", 1100],
    ["entry", `/entries/${NAME}@1.1.0`, 1100],
    ["publisher", `/publishers/${setup.publisher.did}`, 1100],
    ["log", "/log", 1100],
    ["not-found", `/entries/${NAME}@9.9.9`, 1100],
    ["entry-phone", `/entries/${NAME}@1.1.0`, 375],
  ];
  await mkdir(DOCS, { recursive: true });
  try {
    for (const [file, path, width] of shots) {
      const page = await browser.newPage({ viewport: { width, height: 800 } });
      await page.goto(setup.registry.url + path);
      await page.waitForLoadState("networkidle");
      await page.locator("main h1").first().waitFor();
      await page.screenshot({ path: `${DOCS}explorer-${file}.png`, fullPage: true });
      await page.close();
      process.stdout.write(`docs/explorer-${file}.png\n`);
    }
  } finally {
    await browser.close();
  }
} finally {
  await setup.close();
}
