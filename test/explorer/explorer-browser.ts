import { chromium, type Browser, type BrowserContext, type Page } from "playwright-core";

/**
 * What the explorer's browser tests share: Debian's Chromium and a watched page. The integration
 * lane's global setup (test/support/compiled-cli.ts) brings dist/explorer/ up to date first.
 */

/** Debian's chromium (apt-get install chromium), which .ci/run installs. */
const CHROMIUM = "/usr/bin/chromium";

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
