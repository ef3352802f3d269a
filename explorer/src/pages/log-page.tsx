import { useQuery } from "@connectrpc/connect-query";
import { ChangeFeedService } from "../../../gen/registry/v1/change_feed_service_pb.js";
import { TransparencyLogService } from "../../../gen/registry/v1/transparency_log_service_pb.js";
import { TimeText } from "../parts/time-text.js";
import { pinnedLogKey } from "../registry.js";
import { entryHref, useTitle } from "../router.js";

const RECENT = 20;

/** The transparency log: its latest signed checkpoint, its size, and its last records. */
export function LogPage() {
  useTitle("Transparency log");
  const checkpoint = useQuery(TransparencyLogService.method.getCheckpoint, {});
  const size = checkpoint.data?.treeSize;
  const after = size === undefined || size <= BigInt(RECENT) ? undefined : size - BigInt(RECENT) - 1n;
  const recent = useQuery(ChangeFeedService.method.listChanges, { after, limit: RECENT }, { enabled: size !== undefined });
  return (
    <>
      <h1>Transparency log</h1>
      <section aria-labelledby="checkpoint-heading" className="panel">
        <h2 id="checkpoint-heading">Latest checkpoint</h2>
        {checkpoint.isPending && <p>Reading…</p>}
        {checkpoint.isError && <p role="alert">The checkpoint could not be read: {checkpoint.error.message}</p>}
        {checkpoint.data !== undefined && (
          <>
            <p className="log-size">
              <strong>{Number(checkpoint.data.treeSize).toLocaleString()}</strong> records
            </p>
            <pre>
              <code>{checkpoint.data.checkpoint}</code>
            </pre>
            <p className="muted wrap">Log key pinned by this page: {pinnedLogKey() ?? "none"}</p>
            <p>
              As files: <a href="/checkpoint">/checkpoint</a> and the tiles under <code>/tile/</code> (C2SP tlog-tiles).
            </p>
          </>
        )}
      </section>
      <section aria-labelledby="records-heading" className="panel">
        <h2 id="records-heading">Recent records</h2>
        {recent.data !== undefined && (
          <table className="versions">
            <thead>
              <tr>
                <th scope="col">Index</th>
                <th scope="col">Kind</th>
                <th scope="col">Subject</th>
                <th scope="col">Logged</th>
              </tr>
            </thead>
            <tbody>
              {[...recent.data.changes].reverse().map((change) => {
                const subject = change.entry?.entryDid ?? change.entries[0]?.entryDid ?? "";
                return (
                  <tr key={String(change.index)}>
                    <td>{String(change.index)}</td>
                    <td>{change.kind}</td>
                    <td>{subject === "" ? "" : <a href={entryHref(subject)}>{subject}</a>}</td>
                    <td>
                      <TimeText at={change.loggedAt} />
                    </td>
                  </tr>
                );
              })}
            </tbody>
          </table>
        )}
      </section>
    </>
  );
}
