import { execFile } from "node:child_process";
import { readdirSync, statSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { promisify } from "node:util";
import { chromium, type Browser, type BrowserContext, type Page } from "playwright-core";

/** What the explorer's browser tests share: the build, Debian's Chromium, and a watched page. */

const root = fileURLToPath(new URL("../../", import.meta.url));
/** Debian's chromium (apt-get install chromium), which .ci/run installs. */
const CHROMIUM = "/usr/bin/chromium";

/** What the page's bundle is made of: a change in any of them makes dist/explorer/ stale. */
const BUNDLE_INPUTS = ["explorer", "src/sdk", "src/domain", "src/transparency", "gen", "package-lock.json"];

/**
 * Builds explorer/ into dist/explorer/ (about a second) when a source is newer than the build, so
 * the test serves the sources it reads; a fresh build is left alone, as a package being packed
 * alongside may be reading it.
 */
export async function buildExplorer(): Promise<void> {
  const built = statSync(join(root, "dist/explorer/index.html"), { throwIfNoEntry: false })?.mtimeMs ?? 0;
  if (BUNDLE_INPUTS.every((input) => newestMtime(join(root, input)) <= built)) return;
  await promisify(execFile)(process.execPath, ["bin/build-explorer.js"], { cwd: root });
}

function newestMtime(path: string): number {
  const stat = statSync(path);
  if (!stat.isDirectory()) return stat.mtimeMs;
  return Math.max(stat.mtimeMs, ...readdirSync(path).map((entry) => newestMtime(join(path, entry))));
}

export function launchChromium(): Promise<Browser> {
  return chromium.launch({ executablePath: CHROMIUM, args: ["--no-sandbox", "--disable-gpu", "--disable-background-networking"] });
}

/** A tab that records every request it makes and every CSP report or page error it meets. */
export interface WatchedPage {
  readonly page: Page;
  readonly context: BrowserContext;
  readonly requests: string[];
  readonly problems: string[];
  close(): Promise<void>;
}

export async function openWatchedPage(browser: Browser, viewport = { width: 1200, height: 900 }): Promise<WatchedPage> {
  const context = await browser.newContext({ viewport });
  const page = await context.newPage();
  const requests: string[] = [];
  const problems: string[] = [];
  page.on("request", (request) => requests.push(request.url()));
  page.on("pageerror", (error) => problems.push(`page error: ${error.message}`));
  page.on("console", (message) => {
    if (message.type() === "error" && /Content Security Policy|Refused to/i.test(message.text())) problems.push(message.text());
  });
  return { page, context, requests, problems, close: () => context.close() };
}
