import { Code } from "@connectrpc/connect";
import { useQuery } from "@connectrpc/connect-query";
import { RegistryService } from "../../../gen/registry/v1/registry_service_pb.js";
import type { Entry } from "../../../src/sdk/index.js";
import { HistoryTimeline } from "../parts/history-timeline.js";
import { shortDid, StateBanner } from "../parts/state-banner.js";
import { StatusBadge } from "../parts/status-badge.js";
import { TimeText } from "../parts/time-text.js";
import { UsageSnippets } from "../parts/usage-snippets.js";
import { Verification } from "../parts/verification.js";
import { entryHref, publisherHref, useTitle } from "../router.js";
import { NotFoundPage } from "./not-found-page.js";

/** An entry: the latest version for a bare DID, else the version named. */
export function EntryPage({ did }: { readonly did: string }) {
  const resolved = useQuery(RegistryService.method.resolveEntry, { did });
  const error = resolved.error;
  if (error !== null && (error.code === Code.NotFound || error.code === Code.InvalidArgument))
    return <NotFoundPage what={did.includes("@") ? "entry version" : "entry"} subject={did} />;
  if (error !== null) return <LoadFailure did={did} message={error.message} />;
  if (resolved.data?.entry === undefined) return <Loading did={did} />;
  return <EntryView did={did} entry={resolved.data.entry} />;
}

function Loading({ did }: { readonly did: string }) {
  useTitle(did);
  return (
    <>
      <h1>{did}</h1>
      <p>Loading…</p>
    </>
  );
}

function LoadFailure({ did, message }: { readonly did: string; readonly message: string }) {
  useTitle(did);
  return (
    <>
      <h1>{did}</h1>
      <p role="alert">The registry could not be asked: {message}</p>
    </>
  );
}

function EntryView({ did, entry }: { readonly did: string; readonly entry: Entry }) {
  const bare = entry.entryDid.split("@")[0]!;
  useTitle(`${bare} ${entry.version}`);
  const api = (suffix = "") => `/v1/entries/${encodeURI(did)}${suffix}`;
  return (
    <>
      <h1>
        {bare} <span className="version">{entry.version}</span>
      </h1>
      <StateBanner entry={entry} />
      <section aria-labelledby="about-heading" className="panel">
        <h2 id="about-heading">About</h2>
        {entry.description !== "" && <p className="lead">{entry.description}</p>}
        <dl className="facts">
          <dt>Status</dt>
          <dd>
            <StatusBadge status={entry.status} />
            {entry.isLatest && " (latest)"}
          </dd>
          <dt>Type</dt>
          <dd>{entry.entryType}</dd>
          <dt>Publisher</dt>
          <dd>
            <a href={publisherHref(entry.publisherDid)} title={entry.publisherDid}>
              {shortDid(entry.publisherDid)}
            </a>
          </dd>
          <dt>Controllers</dt>
          <dd>
            <a href={publisherHref(entry.publisherDid)} title={entry.publisherDid}>
              {shortDid(entry.publisherDid)}
            </a>{" "}
            (owner: a name's first publisher controls it)
          </dd>
          <dt>Published</dt>
          <dd>
            <TimeText at={entry.publishedAt} />
          </dd>
          {entry.tags.length > 0 && (
            <>
              <dt>Tags</dt>
              <dd>{entry.tags.join(", ")}</dd>
            </>
          )}
          {entry.license !== "" && (
            <>
              <dt>Licence</dt>
              <dd>{entry.license}</dd>
            </>
          )}
          <dt>Content hash</dt>
          <dd className="wrap">{entry.contentHash}</dd>
        </dl>
      </section>
      <Verification entry={entry} />
      <Versions bare={bare} current={entry.version} />
      <HistoryTimeline did={did} />
      <section aria-labelledby="api-heading" className="panel">
        <h2 id="api-heading">In the API</h2>
        <ul>
          <li>
            <a href={api()}>This entry as JSON</a>
          </li>
          <li>
            <a href={`/v1/entries/${encodeURI(bare)}/versions`}>Every version</a>
          </li>
          <li>
            <a href={api("/history")}>History with inclusion proofs</a>
          </li>
          <li>
            <a href={`/v1/log/entries/${encodeURI(entry.entryDid)}`}>Log record and proof</a>
          </li>
        </ul>
      </section>
      <UsageSnippets did={entry.entryDid} />
    </>
  );
}

function Versions({ bare, current }: { readonly bare: string; readonly current: string }) {
  const versions = useQuery(RegistryService.method.listEntryVersions, { did: bare });
  return (
    <section aria-labelledby="versions-heading" className="panel">
      <h2 id="versions-heading">Versions</h2>
      {versions.isPending && <p>Loading versions…</p>}
      {versions.isError && <p role="alert">The versions could not be listed: {versions.error.message}</p>}
      {versions.data !== undefined && (
        <table className="versions">
          <thead>
            <tr>
              <th scope="col">Version</th>
              <th scope="col">State</th>
              <th scope="col">Published</th>
            </tr>
          </thead>
          <tbody>
            {versions.data.versions.map((version) => (
              <tr key={version.version} aria-current={version.version === current ? "page" : undefined}>
                <td>
                  <a href={entryHref(version.entryDid)}>{version.version}</a>
                </td>
                <td>
                  <StatusBadge status={version.status} />
                  {version.deprecated && version.status !== "deprecated" && " deprecated"}
                  {version.yanked && version.status !== "yanked" && " yanked"}
                </td>
                <td>
                  <TimeText at={version.publishedAt} />
                </td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
    </section>
  );
}
