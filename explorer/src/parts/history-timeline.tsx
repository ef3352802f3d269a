import { useQuery } from "@tanstack/react-query";
import { historyQuery } from "../registry.js";
import { publisherHref } from "../router.js";
import { shortDid } from "./state-banner.js";
import { TimeText } from "./time-text.js";

/** A log record as the SDK's LogRecord holds it: the members the timeline reads. */
interface TimelineRecord {
  readonly index: string;
  readonly kind: string;
  readonly loggedAt: string;
  readonly entry?: Record<string, unknown>;
  readonly request?: Readonly<Record<string, string>>;
  readonly revocation?: { readonly reason: string; readonly signer: string } | null;
}

/**
 * The name's history (GET /v1/entries/{did}/history), every record checked by the SDK's history
 * verifier against one checkpoint signed by the pinned log key before any of it is shown.
 */
export function HistoryTimeline({ did }: { readonly did: string }) {
  const history = useQuery(historyQuery(did));
  return (
    <section aria-labelledby="history-heading" className="panel">
      <h2 id="history-heading">History</h2>
      {history.isPending && <p>Fetching and verifying the history…</p>}
      {history.isError && <p role="alert">The history does not verify: {history.error.message}</p>}
      {history.data !== undefined && (
        <>
          <p className="muted">
            {history.data.records.length} records, each proven in checkpoint {history.data.checkpoint.treeSize}, signatures checked.
          </p>
          <ol className="timeline">
            {history.data.records.map(({ record }) => (
              <TimelineItem key={record.index} record={record as unknown as TimelineRecord} />
            ))}
          </ol>
        </>
      )}
    </section>
  );
}

function TimelineItem({ record }: { readonly record: TimelineRecord }) {
  const { who, what } = describe(record);
  return (
    <li>
      <span className="change-index">#{record.index}</span> <TimeText at={record.loggedAt} /> <strong>{what}</strong>
      {who !== "" && (
        <>
          {" "}
          by <a href={publisherHref(who)}>{shortDid(who)}</a>
        </>
      )}
    </li>
  );
}

function describe(record: TimelineRecord): { who: string; what: string } {
  const entry = record.entry as { entryDid?: string; publisherDid?: string } | undefined;
  switch (record.kind) {
    case "entry.created":
      return { who: entry?.publisherDid ?? "", what: `published ${entry?.entryDid ?? ""}` };
    case "entry.revoked":
      return { who: record.revocation?.signer ?? "", what: `revoked ${entry?.entryDid ?? ""}: ${record.revocation?.reason ?? ""}` };
    default: {
      const request = record.request ?? {};
      const why = request.reason || request.note || "";
      const subject = request.subject ?? "";
      return { who: request.by ?? "", what: `${request.action ?? record.kind} ${subject}${why === "" ? "" : `: ${why}`}` };
    }
  }
}
