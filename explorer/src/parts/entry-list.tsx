import type { Entry } from "../../../src/sdk/index.js";
import { entryHref, publisherHref } from "../router.js";
import { shortDid } from "./state-banner.js";
import { StatusBadge } from "./status-badge.js";

/** Entries as a list of cards: name and version, state, description, tags and publisher. */
export function EntryList({ entries, label }: { readonly entries: readonly Entry[]; readonly label: string }) {
  return (
    <ol className="entry-list" aria-label={label}>
      {entries.map((entry) => (
        <li key={entry.entryDid} className="entry-card">
          <h3>
            <a href={entryHref(entry.entryDid)}>{entry.entryDid}</a>
          </h3>
          <p>
            <StatusBadge status={entry.status} /> <span className="muted">{entry.entryType}</span>
          </p>
          {entry.description !== "" && <p>{entry.description}</p>}
          {entry.tags.length > 0 && <p className="tags">Tags: {entry.tags.join(", ")}</p>}
          <p className="muted">
            Publisher <a href={publisherHref(entry.publisherDid)}>{shortDid(entry.publisherDid)}</a>
          </p>
        </li>
      ))}
    </ol>
  );
}
