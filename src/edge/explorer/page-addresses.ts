/**
 * The explorer's addresses (CONTRACT-HISTORY section 19): which page a request path names, read
 * without touching anything. The API's own paths never match, so serving pages shadows none of them.
 */
export type ExplorerAddress =
  | { readonly page: "home" | "search" | "log" }
  | { readonly page: "entry"; readonly did: string }
  | { readonly page: "publisher"; readonly did: string }
  | { readonly page: "asset"; readonly file: string; readonly contentType: string };

/** The kinds of file the build writes under assets/, by extension: no other name is an asset. */
const ASSET_CONTENT_TYPES: Readonly<Record<string, string>> = Object.freeze({
  js: "text/javascript; charset=utf-8",
  css: "text/css; charset=utf-8",
  svg: "image/svg+xml",
  png: "image/png",
  woff2: "font/woff2",
});

/** Hashed build output: a name, a dash, the hash, and one of the extensions above. */
const ASSET_FILE = new RegExp(`^[\\w.-]+\\.(${Object.keys(ASSET_CONTENT_TYPES).join("|")})$`);

export function explorerAddress(path: string): ExplorerAddress | undefined {
  if (path === "/") return { page: "home" };
  if (path === "/search") return { page: "search" };
  if (path === "/log") return { page: "log" };
  if (path.startsWith("/assets/")) {
    const file = path.slice("/assets/".length);
    const extension = ASSET_FILE.exec(file)?.[1];
    return extension === undefined || file.startsWith(".")
      ? undefined
      : { page: "asset", file, contentType: ASSET_CONTENT_TYPES[extension]! };
  }
  for (const page of ["entry", "publisher"] as const) {
    const prefix = page === "entry" ? "/entries/" : "/publishers/";
    if (!path.startsWith(prefix)) continue;
    const did = decodedSegment(path.slice(prefix.length));
    return did === undefined || did === "" ? undefined : { page, did };
  }
  return undefined;
}

/** The DID as typed: `@` literal or `%40`, any other escape decoded too; undefined when malformed. */
function decodedSegment(text: string): string | undefined {
  try {
    return decodeURIComponent(text);
  } catch {
    return undefined;
  }
}
