import AxeBuilder from "@axe-core/playwright";
import type { Browser } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { changeLifecycle, checkpointReaches, logKeyOf, publishVersion, revokeVersion } from "../mirror/mirror-fixture.js";
import { type PublishingSetup, startPublishingRegistry, startRegistryOnFreshDatabase } from "../support/registry-fixture.js";
import { launchChromium, openWatchedPage, type WatchedPage } from "./explorer-browser.js";

/**
 * The web explorer (docs/explorer.md) as a person meets it: the built pages served by a real
 * registry with published, deprecated and yanked versions, driven in Chromium.
 */

const NAME = "did:reg:main:skill:web-search";
const OTHER = "did:reg:main:skill:pdf-reader";
const REVOKED = "did:reg:main:skill:old-tool";
const KB = 1024;

let setup: PublishingSetup;
let browser: Browser;
let base: string;
let tab: WatchedPage;
let logSize: number;

beforeAll(async () => {
  setup = await startPublishingRegistry(["registry.publish.skill"]);
  base = setup.registry.url;
  for (const version of ["1.0.0", "1.1.0", "2.0.0"]) await publishVersion(setup, "web-search", version);
  await publishVersion(setup, "pdf-reader", "1.0.0");
  await publishVersion(setup, "old-tool", "1.0.0");
  await changeLifecycle(setup, `${NAME}@1.1.0`, "deprecate", { reason: "use 2.0", replacement: `${NAME}@2.0.0` });
  await changeLifecycle(setup, `${NAME}@1.0.0`, "yank", { reason: "broken build" });
  await changeLifecycle(setup, `${NAME}@1.0.0`, "deprecate", { reason: "superseded" });
  await revokeVersion(setup, `${REVOKED}@1.0.0`, "key leaked");
  logSize = 9;
  await checkpointReaches(base, logSize);
  browser = await launchChromium();
  tab = await openWatchedPage(browser);
}, 60_000);

afterAll(async () => {
  await tab?.close();
  await browser?.close();
  await setup?.close();
});

/** The first element matching `selector` once it shows `text`. */
async function shows(selector: string, text: string | RegExp) {
  await tab.page.locator(selector, { hasText: text }).first().waitFor({ timeout: 10_000 });
}

describe("serving", () => {
  it("answers each page's address with the page, a strict CSP and no caching without revalidation", async () => {
    for (const path of ["/", "/search?q=web", `/entries/${NAME}`, `/entries/${NAME}@1.1.0`, `/entries/${NAME}%401.1.0`, "/log"]) {
      const response = await fetch(base + path);
      expect(response.status, path).toBe(200);
      expect(response.headers.get("content-type")).toBe("text/html; charset=utf-8");
      expect(response.headers.get("cache-control")).toBe("no-cache");
      expect(response.headers.get("content-security-policy")).toBe(
        "default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; img-src 'self' data:; " +
          "frame-ancestors 'none'; base-uri 'none'; form-action 'self'",
      );
      expect(response.headers.get("x-frame-options")).toBe("DENY");
      const html = await response.text();
      expect(html).toContain(`<meta name="registry-log-key" content="${await logKeyOf(base)}">`);
      expect(html).not.toMatch(/<script(?![^>]*\ssrc=)/);
    }
    const again = await fetch(base, { headers: { "if-none-match": (await fetch(base)).headers.get("etag")! } });
    expect(again.status).toBe(304);
  });

  it("serves hashed assets compressed, cached for a year, and 404s an unknown one", async () => {
    const html = await (await fetch(base)).text();
    const assets = [...html.matchAll(/(?:src|href)="(\/assets\/[^"]+)"/g)].map((match) => match[1]!);
    expect(assets.some((path) => path.endsWith(".js")) && assets.some((path) => path.endsWith(".css"))).toBe(true);
    for (const path of assets) {
      const response = await fetch(base + path, { headers: { "accept-encoding": "br" } });
      expect(response.status).toBe(200);
      expect(response.headers.get("cache-control")).toBe("public, max-age=31536000, immutable");
      expect(response.headers.get("content-encoding")).toBe("br");
    }
    expect((await fetch(`${base}/assets/index-nothere.js`)).status).toBe(404);
  });

  it("answers an unknown entry, version or publisher with the page and HTTP 404", async () => {
    for (const path of [
      "/entries/did:reg:main:skill:no-such-entry",
      `/entries/${NAME}@9.9.9`,
      "/entries/not-a-did",
      "/publishers/did:key:z6MkhaXgBZDvotDkL5257faiztiGiC2QtKLGpbnnEGta2doK",
      // Text the database cannot hold is as unknown as any other, not a failed lookup (503).
      "/publishers/%00",
      "/entries/%00",
      "/publishers/not-a-did",
    ]) {
      const response = await fetch(base + path);
      expect(response.status, path).toBe(404);
      expect(response.headers.get("content-type")).toBe("text/html; charset=utf-8");
    }
    expect((await fetch(`${base}/publishers/${setup.publisher.did}`)).status).toBe(200);
  });

  it("draws a page that looks something up from the address's read bucket", async () => {
    const limited = await startRegistryOnFreshDatabase({ rateLimitRps: 0.01, rateLimitBurst: 2 });
    try {
      const statuses = [];
      for (let i = 0; i < 3; i++) statuses.push((await fetch(`${limited.registry.url}/entries/${NAME}`)).status);
      expect(statuses).toEqual([404, 404, 429]);
      // Pages that cost no lookup are static files, as the API's documentation is.
      expect((await fetch(limited.registry.url)).status).toBe(200);
    } finally {
      await limited.close();
    }
  });

  it("leaves the API's paths their meaning", async () => {
    expect((await fetch(`${base}/v1/entries/${NAME}`)).headers.get("content-type")).toMatch(/^application\/json/);
    expect((await fetch(`${base}/openapi.json`)).headers.get("content-type")).toMatch(/^application\/json/);
    expect((await fetch(`${base}/docs`)).headers.get("content-security-policy")).toContain("'unsafe-inline'");
    expect(await (await fetch(`${base}/healthz`)).json()).toEqual({ status: "ok" });
    expect(await (await fetch(`${base}/checkpoint`)).text()).toMatch(/^\S+\n\d+\n/);
    expect((await fetch(`${base}/v1/nothing-here`)).status).toBe(404);
  });
});

describe("pages in Chromium", () => {
  it("home: loads at most 250 KB of JS and CSS compressed, shows the log's size and recent changes live", async () => {
    const { page } = tab;
    const sizes: Promise<number>[] = [];
    const listener = (response: import("playwright-core").Response) => {
      const type = response.request().resourceType();
      if (type === "script" || type === "stylesheet")
        sizes.push(
          response
            .request()
            .sizes()
            .then((s) => s.responseBodySize),
        );
    };
    page.on("response", listener);
    await page.goto(base);
    await shows(".log-size", String(logSize));
    page.off("response", listener);
    const transferred = (await Promise.all(sizes)).reduce((sum, size) => sum + size, 0);
    console.log(`explorer first load of /: ${(transferred / KB).toFixed(1)} KB of JS and CSS transferred (compressed)`);
    expect(transferred).toBeGreaterThan(0);
    expect(transferred).toBeLessThanOrEqual(250 * KB);
    expect(await page.title()).toBe("Explore the registry · Open Registry");
    await shows(".checkpoint-age", /Its newest record was logged (just now|\d+ seconds? ago|1 minute ago)\./);
    await shows(".change-list li", `${NAME}@1.0.0`);
    // Published after the page opened: the SSE feed brings it in without a reload.
    await publishVersion(setup, "live-one", "1.0.0");
    await shows(".change-list li", "did:reg:main:skill:live-one@1.0.0");
  });

  it("search: the box leads to ranked results, the exact name first (and prints the time to them)", async () => {
    const { page } = tab;
    await page.goto(base);
    await page.getByLabel("Search entries").fill("web search");
    const started = Date.now();
    await page.getByLabel("Search entries").press("Enter");
    await shows(".entry-list li", NAME);
    console.log(`explorer /search: first result ${Date.now() - started} ms after submitting the search box`);
    // Every entry is tagged "search" and "web"; the one named so ranks above them, and the
    // revoked one is not searchable.
    const ranked = (await page.locator(".entry-list li h3").allInnerTexts()).map((did) => did.split("@")[0]);
    expect(ranked[0]).toBe(NAME);
    expect(ranked.slice(1)).toContain(OTHER);
    expect(ranked).not.toContain(REVOKED);
    expect(new URL(page.url()).pathname + new URL(page.url()).search).toBe("/search?q=web+search");
    expect(await page.title()).toBe("Search: web search · Open Registry");
    const direct = Date.now();
    await page.goto(`${base}/search?q=pdf&entryType=skill`);
    await shows(".entry-list li", OTHER);
    console.log(`explorer /search: first result ${Date.now() - direct} ms after loading /search?q=pdf directly`);
    // One result a page: the next page is a link that carries the cursor, and survives a reload.
    await page.goto(`${base}/search?q=web&limit=1`);
    await page.locator(".entry-list li").first().waitFor();
    const first = await page.locator(".entry-list li h3").allInnerTexts();
    expect(first).toHaveLength(1);
    await page.getByRole("link", { name: "Next page" }).click();
    await page.waitForURL(/cursor=/);
    await page.reload();
    await page.locator(".entry-list li").first().waitFor();
    const second = await page.locator(".entry-list li h3").allInnerTexts();
    expect(second).toHaveLength(1);
    expect(second).not.toEqual(first);
    await page.goto(`${base}/search?q=zzzzqqq`);
    await shows("main", "Nothing matches");
  });

  it("entry: state banner, every version's state, history, API links, snippets, and verification in the browser", async () => {
    const { page } = tab;
    await page.goto(`${base}/entries/${NAME}%401.1.0`);
    await shows(".state-banner", "Deprecated");
    await shows(".state-banner", "Reason: use 2.0");
    expect(await page.locator(".state-banner a", { hasText: `${NAME}@2.0.0` }).getAttribute("href")).toBe(`/entries/${NAME}@2.0.0`);
    const rows = page.locator("table.versions tbody tr");
    await rows.first().waitFor();
    expect(await rows.allInnerTexts()).toEqual([
      expect.stringMatching(/^2\.0\.0\s+active/),
      expect.stringMatching(/^1\.1\.0\s+deprecated/),
      expect.stringMatching(/^1\.0\.0\s+yanked deprecated/),
    ]);
    await shows(".verification", /Verified against checkpoint \d+.*the entry served matches its log records/);
    await shows(".timeline li", "deprecate");
    expect(await page.locator(".timeline li").count()).toBe(2);
    expect(await page.getByRole("link", { name: "This entry as JSON" }).getAttribute("href")).toBe(`/v1/entries/${NAME}@1.1.0`);
    await shows("pre", `registry resolve ${NAME}@1.1.0`);
    expect(await page.title()).toBe(`${NAME} 1.1.0 · Open Registry`);

    // The yanked version, reached by a link in place, and still there after a reload.
    await page.getByRole("link", { name: "1.0.0", exact: true }).click();
    await shows(".state-banner", "Yanked");
    // Both states that apply, the more severe first.
    expect(await page.locator(".state-banner h2").allTextContents()).toEqual(["Yanked", "Deprecated"]);
    expect(new URL(page.url()).pathname).toBe(`/entries/${NAME}@1.0.0`);
    await page.reload();
    await shows(".state-banner", "broken build");
    await shows(".verification", /Verified against checkpoint/);
  });

  it("entry: says what does not verify when the registry's answers are altered on the way", async () => {
    const altered = await openWatchedPage(browser);
    try {
      const { page } = altered;
      // A proof whose first sibling hash is replaced, and a resolve whose description is not the logged one.
      await page.route("**/registry.v1.TransparencyLogService/GetEntryProof", async (route) => {
        const body = await (await route.fetch()).json();
        body.proof[0] = Buffer.alloc(32).toString("base64");
        await route.fulfill({ json: body });
      });
      await page.route("**/registry.v1.RegistryService/ResolveEntry", async (route) => {
        const body = await (await route.fetch()).json();
        body.entry.description = "Not what the publisher signed";
        await route.fulfill({ json: body });
      });
      await page.goto(`${base}/entries/${NAME}@2.0.0`);
      const verification = page.locator('.verification[data-state="failed"]');
      await verification.waitFor();
      expect(await verification.textContent()).toMatch(/Does not verify: .*inclusion/i);
      expect(await verification.textContent()).toContain("The entry served differs from its log records in description");
    } finally {
      await altered.close();
    }
  });

  it("entry: a revoked version's banner, and the name's only controller", async () => {
    const { page } = tab;
    await page.goto(`${base}/entries/${REVOKED}`);
    await shows(".state-banner", "Revoked");
    await shows(".state-banner", "Reason: key leaked");
    await shows(".facts dd", "(owner: a name's first publisher controls it)");
    await shows(".timeline li", "revoked");
    await shows(".verification", /Verified against checkpoint/);
  });

  it("publisher and log pages", async () => {
    const { page } = tab;
    await page.goto(`${base}/publishers/${setup.publisher.did}`);
    await shows("table.versions td", NAME);
    await shows("table.versions td", OTHER);
    // Revoked versions too: the page lists what the publisher published, in any state.
    await shows("table.versions tr", new RegExp(`${REVOKED}.*revoked`));
    expect(await page.title()).toBe(`Publisher ${setup.publisher.did} · Open Registry`);
    await page.goto(`${base}/log`);
    await shows("pre", /^\S+\n\d+\n/);
    await shows("table.versions td", "entry.lifecycle");
    expect(await page.title()).toBe("Transparency log · Open Registry");
  });

  it("not found: a readable page with its own title", async () => {
    const { page } = tab;
    const response = await page.goto(`${base}/entries/${NAME}@9.9.9`);
    expect(response?.status()).toBe(404);
    await shows("h1", "Not found");
    await shows("main", `There is no entry version ${NAME}@9.9.9 in this registry.`);
    expect(await page.title()).toBe(`Not found: ${NAME}@9.9.9 · Open Registry`);
    const nobody = "did:key:z6MkhaXgBZDvotDkL5257faiztiGiC2QtKLGpbnnEGta2doK";
    expect((await page.goto(`${base}/publishers/${nobody}`))?.status()).toBe(404);
    await shows("main", `There is no publisher ${nobody} in this registry.`);
  });

  it("works from the keyboard: skip link, search box, then a result", async () => {
    const { page } = tab;
    await page.goto(base);
    await shows(".log-size", /\d/);
    await page.keyboard.press("Tab");
    expect(await page.locator(":focus").textContent()).toBe("Skip to content");
    await page.keyboard.press("Enter");
    expect(await page.locator(":focus").getAttribute("id")).toBe("main");
    await page.keyboard.press("Tab");
    expect(await page.locator(":focus").getAttribute("name")).toBe("q");
    await page.keyboard.type("pdf");
    await page.keyboard.press("Enter");
    await shows(".entry-list li", OTHER);
    await page.locator(".entry-list a", { hasText: OTHER }).focus();
    await page.keyboard.press("Enter");
    await shows("h1", OTHER);
  });
});

describe("for every page", () => {
  const PAGES = () => [
    "/",
    "/search?q=web",
    `/entries/${NAME}@1.1.0`,
    `/entries/${NAME}@1.0.0`,
    `/publishers/${setup.publisher.did}`,
    "/log",
    "/entries/nothing",
  ];

  it("has no serious or critical axe-core violations", async () => {
    for (const path of PAGES()) {
      await tab.page.goto(base + path);
      await tab.page.locator("main h1").first().waitFor();
      await tab.page.waitForLoadState("networkidle");
      const results = await new AxeBuilder({ page: tab.page }).analyze();
      const serious = results.violations.filter((violation) => violation.impact === "serious" || violation.impact === "critical");
      expect(serious.map(({ id, nodes }) => `${path}: ${id} ${nodes.map((node) => node.target.join(" ")).join(", ")}`)).toEqual([]);
    }
  });

  it("fits a 375 px wide screen without sideways scrolling", async () => {
    const phone = await openWatchedPage(browser, { width: 375, height: 740 });
    try {
      for (const path of PAGES()) {
        await phone.page.goto(base + path);
        await phone.page.locator("main h1").first().waitFor();
        expect(await phone.page.evaluate<number>("document.documentElement.scrollWidth"), path).toBeLessThanOrEqual(375);
      }
    } finally {
      await phone.close();
    }
  });

  it("loaded nothing from another origin and broke no CSP rule", () => {
    expect(tab.requests.length).toBeGreaterThan(0);
    expect(tab.requests.filter((url) => !url.startsWith(`${base}/`) && url !== base)).toEqual([]);
    expect(tab.problems).toEqual([]);
  });
});
