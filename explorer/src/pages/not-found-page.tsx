import { SearchForm } from "../parts/search-form.js";
import { useTitle } from "../router.js";

/** What a reader sees for an address that names nothing: what was looked for, and ways on. */
export function NotFoundPage({ what, subject }: { readonly what: string; readonly subject: string }) {
  useTitle(`Not found: ${subject}`);
  return (
    <section className="not-found" aria-labelledby="not-found-heading">
      <h1 id="not-found-heading">Not found</h1>
      <p>
        There is no {what} <code>{subject}</code> in this registry.
      </p>
      <p>Check the spelling, or search for it:</p>
      <SearchForm />
      <p>
        <a href="/">Back to the explorer's home</a>
      </p>
    </section>
  );
}
