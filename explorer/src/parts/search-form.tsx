import { type FormEvent, useId, useState } from "react";
import { navigate, searchHref } from "../router.js";

/** The search box: a real GET form to /search (it works as a plain link too), followed in place. */
export function SearchForm({ q = "", entryType = "" }: { readonly q?: string; readonly entryType?: string }) {
  const [text, setText] = useState(q);
  const [type, setType] = useState(entryType);
  const textId = useId();
  const typeId = useId();
  function submit(event: FormEvent<HTMLFormElement>) {
    event.preventDefault();
    if (text.trim() !== "") navigate(searchHref(text.trim(), { entryType: type }));
  }
  return (
    <search>
      <form className="search-form" action="/search" method="get" onSubmit={submit}>
        <label htmlFor={textId}>Search entries</label>
        <input
          id={textId}
          name="q"
          type="search"
          required
          value={text}
          onChange={(event) => setText(event.target.value)}
          placeholder="web search"
        />
        <label htmlFor={typeId}>Type</label>
        <select id={typeId} name="entryType" value={type} onChange={(event) => setType(event.target.value)}>
          <option value="">any</option>
          <option value="skill">skill</option>
          <option value="agent">agent</option>
        </select>
        <button type="submit">Search</button>
      </form>
    </search>
  );
}
