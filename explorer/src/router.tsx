import { useEffect, useSyncExternalStore } from "react";

/**
 * A router of the page's five addresses over the History API: links change the address without a
 * reload, Back and Forward work, and every address is also served by the registry, so a reload or a
 * shared link lands on the same page.
 */
export type Route =
  | { readonly page: "home" }
  | { readonly page: "search"; readonly q: string; readonly entryType: string; readonly cursor: string; readonly limit: string }
  | { readonly page: "entry"; readonly did: string }
  | { readonly page: "publisher"; readonly did: string }
  | { readonly page: "log" }
  | { readonly page: "not-found" };

const NAVIGATED = "registry-navigated";

function subscribe(listener: () => void): () => void {
  window.addEventListener("popstate", listener);
  window.addEventListener(NAVIGATED, listener);
  return () => {
    window.removeEventListener("popstate", listener);
    window.removeEventListener(NAVIGATED, listener);
  };
}

const currentHref = () => window.location.pathname + window.location.search;

export function useRoute(): Route {
  return routeOf(useSyncExternalStore(subscribe, currentHref));
}

/** Shows `href`'s page, and moves focus to it so that a screen reader announces the new page. */
export function navigate(href: string): void {
  window.history.pushState(null, "", href);
  window.scrollTo(0, 0);
  window.dispatchEvent(new Event(NAVIGATED));
  document.getElementById("main")?.focus({ preventScroll: true });
}

export function routeOf(href: string): Route {
  const url = new URL(href, window.location.origin);
  const path = url.pathname;
  if (path === "/") return { page: "home" };
  if (path === "/log") return { page: "log" };
  if (path === "/search") {
    const get = (name: string) => url.searchParams.get(name) ?? "";
    return { page: "search", q: get("q"), entryType: get("entryType"), cursor: get("cursor"), limit: get("limit") };
  }
  for (const [prefix, page] of [
    ["/entries/", "entry"],
    ["/publishers/", "publisher"],
  ] as const) {
    if (!path.startsWith(prefix)) continue;
    try {
      const did = decodeURIComponent(path.slice(prefix.length));
      if (did !== "") return { page, did };
    } catch {
      // A malformed escape names nothing.
    }
  }
  return { page: "not-found" };
}

/** The page address of an entry DID (bare or with @version), kept readable: only what must be is escaped. */
export function entryHref(did: string): string {
  return `/entries/${encodeURI(did).replace(/[?#]/g, encodeURIComponent)}`;
}

export function publisherHref(did: string): string {
  return `/publishers/${encodeURI(did).replace(/[?#]/g, encodeURIComponent)}`;
}

/** A search's address: the API's parameter names, the empty ones left out. */
export function searchHref(q: string, more: { entryType?: string; limit?: string; cursor?: string } = {}): string {
  const params = new URLSearchParams({ q });
  for (const [name, value] of Object.entries(more)) if (value !== undefined && value !== "") params.set(name, value);
  return `/search?${params.toString()}`;
}

/**
 * Follows clicks on links to the explorer's own pages in place (one listener for the document, so
 * every link stays a plain <a>); a modified click, or a link to the API, loads as usual.
 */
export function useLinkFollowing(): void {
  useEffect(() => {
    function follow(event: MouseEvent) {
      if (event.defaultPrevented || event.button !== 0 || event.metaKey || event.ctrlKey || event.shiftKey || event.altKey) return;
      const link = (event.target as Element | null)?.closest?.("a[href]");
      if (!(link instanceof HTMLAnchorElement) || link.target !== "" || link.origin !== window.location.origin) return;
      // A link within this page (the skip link) is the browser's to follow.
      if (link.hash !== "" && link.pathname === window.location.pathname) return;
      if (routeOf(link.pathname + link.search).page === "not-found") return;
      event.preventDefault();
      navigate(link.pathname + link.search);
    }
    document.addEventListener("click", follow);
    return () => document.removeEventListener("click", follow);
  }, []);
}

/** Sets the document's title while a page shows. */
export function useTitle(title: string): void {
  useEffect(() => {
    document.title = `${title} · Open Registry`;
  }, [title]);
}
