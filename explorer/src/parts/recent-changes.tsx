import { useEffect, useState } from "react";
import { entryHref } from "../router.js";
import { TimeText } from "./time-text.js";

/** A change as the SSE feed sends it (the Change message's JSON, docs/feed.md). */
interface FeedChange {
  readonly index: string;
  readonly kind: string;
  readonly loggedAt: string;
  readonly entry?: { readonly entryDid: string } | null;
  readonly entries?: readonly { readonly entryDid: string }[];
}

const SHOWN = 10;

/**
 * The last changes, live: an EventSource on /v1/changes/stream starting just before the log's head,
 * so the list fills with the last few and then grows as the registry writes. EventSource resumes
 * by itself after a dropped connection (Last-Event-ID).
 */
export function RecentChanges({ logSize }: { readonly logSize: number }) {
  const [changes, setChanges] = useState<FeedChange[]>([]);
  const [live, setLive] = useState(false);
  useEffect(() => {
    const after = logSize - SHOWN - 1;
    const source = new EventSource(after >= 0 ? `/v1/changes/stream?after=${after}` : "/v1/changes/stream");
    source.onopen = () => setLive(true);
    source.onerror = () => setLive(false);
    source.addEventListener("change", (event) => {
      const change = JSON.parse((event as MessageEvent<string>).data) as FeedChange;
      setChanges((shown) => [change, ...shown.filter((old) => old.index !== change.index)].slice(0, SHOWN));
    });
    return () => source.close();
  }, [logSize]);
  return (
    <section aria-labelledby="recent-heading" className="panel">
      <h2 id="recent-heading">Recent changes</h2>
      <p className="muted" aria-live="polite">
        {live ? "Live: new changes appear as the registry writes them." : "Connecting to the change feed…"}
      </p>
      {changes.length === 0 ? (
        <p>No changes yet.</p>
      ) : (
        <ol className="change-list" aria-label="Recent changes, newest first">
          {changes.map((change) => (
            <li key={change.index}>
              <span className="change-index">#{change.index}</span> <span className="change-kind">{change.kind}</span>{" "}
              {subjects(change).map((did) => (
                <a key={did} href={entryHref(did)}>
                  {did}
                </a>
              ))}{" "}
              <TimeText at={change.loggedAt} />
            </li>
          ))}
        </ol>
      )}
    </section>
  );
}

function subjects(change: FeedChange): string[] {
  if (change.entry) return [change.entry.entryDid];
  return (change.entries ?? []).slice(0, 3).map((entry) => entry.entryDid);
}
