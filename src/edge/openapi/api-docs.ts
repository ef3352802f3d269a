import { readFile } from "node:fs/promises";
import { join } from "node:path";
import type { JsonObject } from "@bufbuild/protobuf";
import type { HttpExchange, ResponseHeaders } from "../../transport/http-exchange.js";
import { answerStatic, type StaticBody, staticBody } from "../static-answer.js";
import { openApiText } from "./openapi-document.js";
import { RENDERER_FILES, rendererDirectory } from "./renderer-files.js";

/**
 * GET /openapi.json, and a reference page at /docs rendered by Swagger UI from this server's own
 * copy (renderer-files.ts): the page loads nothing from anywhere else, and no other site may frame it
 * (its Content-Security-Policy says both to the browser).
 */
export interface ApiDocs {
  /** Answers the request and returns true when it is one of the docs' paths; false leaves it alone. */
  serve(exchange: HttpExchange): boolean;
}

/** A static answer's type, caching rule, and where its bytes come from. */
interface Asset {
  readonly contentType: string;
  readonly cacheControl: string;
  readonly load: () => Promise<Buffer>;
}

/**
 * The document and page change with a deploy, so caches revalidate them (cheaply, by ETag);
 * the renderer's files change only with its version, so caches may keep them for a day.
 */
const REVALIDATE = "no-cache";
const RENDERER_MAX_AGE = "public, max-age=86400";

/**
 * What every HTML answer carries: a page that loads nothing from elsewhere and that no other site
 * may frame (clickjacking); X-Frame-Options for browsers that predate frame-ancestors.
 */
const HTML_HEADERS: Readonly<ResponseHeaders> = Object.freeze({
  "content-security-policy":
    "default-src 'none'; script-src 'self'; style-src 'self' 'unsafe-inline'; img-src 'self' data:; connect-src 'self'; frame-ancestors 'none'",
  "x-frame-options": "DENY",
});

export function createApiDocs(document: JsonObject): ApiDocs {
  const documentBytes = Buffer.from(openApiText(document));
  const assets = new Map<string, Asset>([
    ["/openapi.json", { contentType: "application/json", cacheControl: REVALIDATE, load: async () => documentBytes }],
    ["/docs", { contentType: "text/html; charset=utf-8", cacheControl: REVALIDATE, load: async () => Buffer.from(PAGE) }],
    ["/docs/init.js", { contentType: "text/javascript; charset=utf-8", cacheControl: REVALIDATE, load: async () => Buffer.from(INIT) }],
    ...Object.entries(RENDERER_FILES).map(([file, contentType]): [string, Asset] => [
      `/docs/${file}`,
      { contentType, cacheControl: RENDERER_MAX_AGE, load: async () => readFile(join(rendererDirectory(), file)) },
    ]),
  ]);
  const loaded = new Map<string, Promise<StaticBody>>();

  function load(path: string, asset: Asset): Promise<StaticBody> {
    let entry = loaded.get(path);
    if (entry === undefined) {
      entry = asset.load().then(staticBody);
      // A failed read (a broken install) is retried on the next request rather than remembered.
      entry.catch(() => loaded.delete(path));
      loaded.set(path, entry);
    }
    return entry;
  }

  async function answer(exchange: HttpExchange, path: string, asset: Asset): Promise<void> {
    const headers: ResponseHeaders = { "content-type": asset.contentType, "cache-control": asset.cacheControl };
    if (asset.contentType.startsWith("text/html")) Object.assign(headers, HTML_HEADERS);
    await answerStatic(exchange, 200, headers, await load(path, asset));
  }

  return {
    serve(exchange) {
      const path = exchange.path === "/docs/" ? "/docs" : exchange.path;
      const asset = assets.get(path);
      if (asset === undefined || (exchange.method !== "GET" && exchange.method !== "HEAD")) return false;
      exchange.observation.quiet = true;
      answer(exchange, path, asset).catch(() => {
        if (!exchange.done)
          exchange.respond(
            500,
            { "content-type": "text/plain; charset=utf-8", "cache-control": "no-store" },
            Buffer.from("docs unavailable\n"),
          );
      });
      return true;
    },
  };
}

const PAGE = `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>Open Registry API</title>
<link rel="icon" type="image/png" href="/docs/favicon-32x32.png">
<link rel="stylesheet" href="/docs/swagger-ui.css">
</head>
<body>
<div id="api-reference"></div>
<script src="/docs/swagger-ui-bundle.js"></script>
<script src="/docs/init.js"></script>
</body>
</html>
`;

// validatorUrl null: the renderer would otherwise send the document to validator.swagger.io.
const INIT = `window.addEventListener("load", function () {
  window.ui = SwaggerUIBundle({
    url: "/openapi.json",
    dom_id: "#api-reference",
    deepLinking: true,
    validatorUrl: null,
  });
});
`;
