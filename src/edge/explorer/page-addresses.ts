/**
 * The explorer's addresses (CONTRACT-HISTORY section 19): which page a request path names, read
 * without touching anything. The API's own paths never match, so serving pages shadows none of them.
 */
export type ExplorerAddress =
  | { readonly page: "home" | "search" | "log" }
  | { readonly page: "entry"; readonly did: string }
  | { readonly page: "publisher"; readonly did: string }
  | { readonly page: "asset"; readonly file: string };

/** Hashed build output: a name, a dash, the hash, and a known extension. */
const ASSET_FILE = /^[\w.-]+\.(js|css|svg|png|woff2)$/;

export function explorerAddress(path: string): ExplorerAddress | undefined {
  if (path === "/") return { page: "home" };
  if (path === "/search") return { page: "search" };
  if (path === "/log") return { page: "log" };
  if (path.startsWith("/assets/")) {
    const file = path.slice("/assets/".length);
    return ASSET_FILE.test(file) && !file.startsWith(".") ? { page: "asset", file } : undefined;
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
