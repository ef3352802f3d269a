import { useQuery } from "@connectrpc/connect-query";
import { RegistryService } from "../../../gen/registry/v1/registry_service_pb.js";
import { EntryList } from "../parts/entry-list.js";
import { SearchForm } from "../parts/search-form.js";
import { searchHref, useTitle } from "../router.js";

interface SearchProps {
  readonly q: string;
  readonly entryType: string;
  readonly cursor: string;
  /** Results a page, as the address gives it; the registry's default when absent or not a number. */
  readonly limit: string;
}

/** Ranked search results (GET /v1/search), one page per address; the next page is a link. */
export function SearchPage({ q, entryType, cursor, limit }: SearchProps) {
  useTitle(q === "" ? "Search" : `Search: ${q}`);
  const pageSize = /^\d{1,3}$/.test(limit) ? Number(limit) : 0;
  const results = useQuery(RegistryService.method.searchEntries, { q, entryType, cursor, limit: pageSize }, { enabled: q !== "" });
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
            <a href={searchHref(q, { entryType, limit, cursor: results.data.nextCursor })} rel="next">
              Next page
            </a>
          </p>
        )}
      </section>
    </>
  );
}
