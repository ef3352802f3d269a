import { useQuery } from "@tanstack/react-query";
import type { Entry } from "../../../src/sdk/index.js";
import { StatusBadge } from "../parts/status-badge.js";
import { registryClient } from "../registry.js";
import { entryHref, useTitle } from "../router.js";
import { NotFoundPage } from "./not-found-page.js";

/** Every state, so a publisher whose versions are all revoked or removed still shows them. */
const EVERY_STATUS = ["active", "deprecated", "yanked", "quarantined", "revoked", "removed"];

/** A publisher: the names it published (its role in each: owner, until controllers exist). */
export function PublisherPage({ did }: { readonly did: string }) {
  const published = useQuery({
    queryKey: ["publisher", did],
    queryFn: () =>
      registryClient.discoverPage({
        conditions: [
          { field: "publisherDid", op: "=", value: did },
          { field: "status", op: "IN", value: EVERY_STATUS },
        ],
        pageSize: 100,
      }),
  });
  if (published.data !== undefined && published.data.entries.length === 0) return <NotFoundPage what="publisher" subject={did} />;
  return <PublisherView did={did} entries={published.data?.entries} error={published.error?.message} total={published.data?.total} />;
}

function PublisherView(props: {
  readonly did: string;
  readonly entries?: readonly Entry[];
  readonly error?: string;
  readonly total?: number;
}) {
  useTitle(`Publisher ${props.did}`);
  const names = props.entries === undefined ? [] : byName(props.entries);
  return (
    <>
      <h1>Publisher</h1>
      <p className="wrap">
        <code>{props.did}</code>
      </p>
      <section aria-labelledby="names-heading" className="panel">
        <h2 id="names-heading">Names</h2>
        {props.error !== undefined && <p role="alert">The names could not be listed: {props.error}</p>}
        {props.entries === undefined && props.error === undefined && <p>Loading…</p>}
        {names.length > 0 && (
          <table className="versions">
            <thead>
              <tr>
                <th scope="col">Name</th>
                <th scope="col">Role</th>
                <th scope="col">Versions</th>
              </tr>
            </thead>
            <tbody>
              {names.map(([name, versions]) => (
                <tr key={name}>
                  <td>
                    <a href={entryHref(name)}>{name}</a>
                  </td>
                  <td>owner</td>
                  <td>
                    {versions.map((entry) => (
                      <span key={entry.version} className="version-chip">
                        <a href={entryHref(entry.entryDid)}>{entry.version}</a> <StatusBadge status={entry.status} />
                      </span>
                    ))}
                  </td>
                </tr>
              ))}
            </tbody>
          </table>
        )}
        {props.total !== undefined && props.entries !== undefined && props.total > props.entries.length && (
          <p className="muted">
            Showing the newest {props.entries.length} of {props.total} versions.
          </p>
        )}
      </section>
    </>
  );
}

function byName(entries: readonly Entry[]): [string, Entry[]][] {
  const names = new Map<string, Entry[]>();
  for (const entry of entries) {
    const name = entry.entryDid.split("@")[0]!;
    names.set(name, [...(names.get(name) ?? []), entry]);
  }
  return [...names.entries()].sort(([a], [b]) => a.localeCompare(b));
}
