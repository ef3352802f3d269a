import { existsSync } from "node:fs";
import { createRequire } from "node:module";
import { dirname } from "node:path";
import { fileURLToPath } from "node:url";

/**
 * The files of Swagger UI (swagger-ui-dist) that /docs serves, with their content types. The
 * package itself is a development dependency: its 12 MB, and the install-time telemetry it
 * depends on, stay out of a production install; the build copies these few files instead.
 */
export const RENDERER_FILES = {
  "swagger-ui.css": "text/css; charset=utf-8",
  "swagger-ui-bundle.js": "text/javascript; charset=utf-8",
  "favicon-32x32.png": "image/png",
} as const;

/** Its licence, notice and the bundle's third-party licences, which travel with the copy. */
export const RENDERER_LICENSE_FILES = ["LICENSE", "NOTICE", "swagger-ui-bundle.js.LICENSE.txt"] as const;

/** The copy's folder, beside this module: dist/src/edge/openapi/swagger-ui/ in the build. */
export const RENDERER_COPY = "swagger-ui";

/** The build's copy when there is one (an installed package); else swagger-ui-dist itself (the sources). */
export function rendererDirectory(): string {
  const copy = fileURLToPath(new URL(`./${RENDERER_COPY}/`, import.meta.url));
  if (existsSync(copy)) return copy;
  return dirname(createRequire(import.meta.url).resolve("swagger-ui-dist/package.json"));
}
