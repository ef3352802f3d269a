import { useQuery } from "@connectrpc/connect-query";
import { RegistryService } from "../../../gen/registry/v1/registry_service_pb.js";
import { EntryList } from "../parts/entry-list.js";
import { SearchForm } from "../parts/search-form.js";
import { searchHref, useTitle } from "../router.js";

/** Ranked search results (GET /v1/search), one page per address; the next page is a link. */
export function SearchPage({ q, entryType, cursor }: { readonly q: string; readonly entryType: string; readonly cursor: string }) {
  useTitle(q === "" ? "Search" : `Search: ${q}`);
  const results = useQuery(RegistryService.method.searchEntries, { q, entryType, cursor }, { enabled: q !== "" });
  return (
    <>
      <h1>{q === "" ? "Search" : `Results for “${q}”`}</h1>
      <SearchForm key={`${q}|${entryType}`} q={q} entryType={entryType} />
      <section aria-labelledby="results-heading" aria-busy={results.isFetching}>
        <h2 id="results-heading" className="visually-hidden">
          Results
        </h2>
        {q === "" && <p>Type a name, a tag or words of a description.</p>}
        {q !== "" && results.isPending && <p>Searching…</p>}
        {results.isError && <p role="alert">The search failed: {results.error.message}</p>}
        {results.data !== undefined && results.data.entries.length === 0 && <p>Nothing matches “{q}”.</p>}
        {results.data !== undefined && results.data.entries.length > 0 && (
          <EntryList entries={results.data.entries} label="Search results" />
        )}
        {results.data?.nextCursor && (
          <p>
            <a href={searchHref(q, entryType, results.data.nextCursor)} rel="next">
              Next page
            </a>
          </p>
        )}
      </section>
    </>
  );
}
