import type { Encoding } from "../../transport/compression.js";
import type { HttpExchange, ResponseHeaders } from "../../transport/http-exchange.js";
import type { ExchangeLimit } from "../rate-limit-interceptor.js";
import { type ExplorerFiles, NOT_BUILT_TEXT, pageHtml } from "./explorer-files.js";
import { type ExplorerAddress, explorerAddress } from "./page-addresses.js";
import { answerStatic, type StaticBody, staticBody } from "../static-answer.js";

/** What the server asks the registry before answering a page, so an unknown one is a 404. */
export interface ExplorerLookup {
  /** Whether resolving `did` (bare or with @version) finds an entry. */
  entryExists(did: string): Promise<boolean>;
  /** Whether `did` has published anything. */
  publisherExists(did: string): Promise<boolean>;
}

export interface ExplorerOptions {
  readonly files: ExplorerFiles;
  /** The log's verifier key, which the page pins to check checkpoints. */
  readonly logKey: string;
  readonly lookup: ExplorerLookup;
  /** The per-address "reads" limit a page that costs a lookup draws from; none when reads are not limited. */
  readonly limitLookup?: ExchangeLimit;
  readonly log: (error: unknown) => void;
}

/** Serves the explorer's pages and assets; false leaves every other request to the API. */
export interface Explorer {
  serve(exchange: HttpExchange): boolean;
}

/**
 * Nothing loads from elsewhere, no inline script or style runs, no other site frames a page, and
 * forms post only here. The page's own script is all that runs (index.html has no inline code).
 */
const PAGE_HEADERS: Readonly<ResponseHeaders> = Object.freeze({
  "content-type": "text/html; charset=utf-8",
  "content-security-policy":
    "default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; img-src 'self' data:; " +
    "frame-ancestors 'none'; base-uri 'none'; form-action 'self'",
  "x-frame-options": "DENY",
  "referrer-policy": "same-origin",
  // Pages change with every deploy: caches revalidate them by ETag.
  "cache-control": "no-cache",
});

/** Hashed names change with their content, so a cache may keep an asset for good. */
const ASSET_CACHE = "public, max-age=31536000, immutable";

export function createExplorer(options: ExplorerOptions): Explorer {
  const { files, lookup } = options;
  const page = files.template === undefined ? undefined : staticBody(Buffer.from(pageHtml(files.template, options.logKey)));
  const assets = new Map<string, Promise<StaticBody | undefined>>();

  // Only the build's own names are read and kept: a request for any other name costs no memory.
  function asset(file: string): Promise<StaticBody | undefined> {
    if (!files.assetNames.has(file)) return Promise.resolve(undefined);
    let loaded = assets.get(file);
    if (loaded === undefined) {
      loaded = files.readAsset(file).then((bytes) => (bytes === undefined ? undefined : withBuiltForms(file, bytes)));
      assets.set(file, loaded);
      // A failed read (a broken install) is tried again on the next request rather than remembered.
      void loaded.then((body) => body === undefined && assets.delete(file));
    }
    return loaded;
  }

  /** The build's compressed forms, each read when a client first accepts its coding. */
  function withBuiltForms(file: string, bytes: Buffer): StaticBody {
    const forms = new Map<Encoding, Promise<Buffer | undefined>>();
    return {
      bytes,
      builtForm(encoding) {
        let form = forms.get(encoding);
        if (form === undefined) forms.set(encoding, (form = files.readCompressedAsset(file, encoding)));
        return form;
      },
    };
  }

  async function found(address: ExplorerAddress): Promise<boolean> {
    if (address.page === "entry") return lookup.entryExists(address.did);
    if (address.page === "publisher") return lookup.publisherExists(address.did);
    return true;
  }

  async function answer(exchange: HttpExchange, address: ExplorerAddress): Promise<void> {
    if (address.page === "asset") {
      const body = await asset(address.file);
      if (body === undefined) {
        exchange.respond(404, { "content-type": "text/plain; charset=utf-8", "cache-control": "no-store" }, Buffer.from("no such asset\n"));
        return;
      }
      await answerStatic(exchange, 200, { "content-type": address.contentType, "cache-control": ASSET_CACHE }, body);
      return;
    }
    if (page === undefined) {
      exchange.respond(503, { "content-type": "text/plain; charset=utf-8", "cache-control": "no-store" }, Buffer.from(NOT_BUILT_TEXT));
      return;
    }
    const looksUp = address.page === "entry" || address.page === "publisher";
    if (looksUp && options.limitLookup !== undefined && !(await options.limitLookup(exchange))) return;
    // The page itself renders the not-found view; the status tells crawlers and scripts.
    await answerStatic(exchange, (await found(address)) ? 200 : 404, PAGE_HEADERS, page);
  }

  return {
    serve(exchange) {
      if (exchange.method !== "GET" && exchange.method !== "HEAD") return false;
      const address = explorerAddress(exchange.path);
      if (address === undefined) return false;
      exchange.observation.quiet = true;
      // A lookup that failed (the database out of reach) says to try again, as the API's 503 does.
      answer(exchange, address).catch((error: unknown) => {
        options.log(error);
        if (!exchange.done)
          exchange.respond(
            503,
            { "content-type": "text/plain; charset=utf-8", "cache-control": "no-store", "retry-after": "1" },
            Buffer.from("page unavailable for now: try again shortly\n"),
          );
      });
      return true;
    },
  };
}
