import { useQuery } from "@connectrpc/connect-query";
import { TransparencyLogService } from "../../../gen/registry/v1/transparency_log_service_pb.js";
import { ChangeFeedService } from "../../../gen/registry/v1/change_feed_service_pb.js";
import { RecentChanges } from "../parts/recent-changes.js";
import { ageText } from "../parts/time-text.js";
import { SearchForm } from "../parts/search-form.js";
import { useTitle } from "../router.js";

export function HomePage() {
  useTitle("Explore the registry");
  const checkpoint = useQuery(TransparencyLogService.method.getCheckpoint, {});
  const size = checkpoint.data === undefined ? undefined : Number(checkpoint.data.treeSize);
  return (
    <>
      <h1>Explore the registry</h1>
      <p className="lead">Signed, versioned skill and agent entries, every change recorded in a public transparency log.</p>
      <SearchForm />
      <section aria-labelledby="log-heading" className="panel">
        <h2 id="log-heading">The log</h2>
        {checkpoint.isPending && <p>Reading the latest checkpoint…</p>}
        {checkpoint.isError && <p role="alert">The checkpoint could not be read: {checkpoint.error.message}</p>}
        {size !== undefined && (
          <>
            <p className="log-size">
              <strong>{size.toLocaleString()}</strong> records in the latest signed checkpoint. <a href="/log">See the log</a>
            </p>
            {size > 0 && <CheckpointAge size={size} />}
          </>
        )}
      </section>
      {size !== undefined && <RecentChanges logSize={size} />}
    </>
  );
}

/**
 * How old the checkpoint is, as the time of the newest record it covers: a checkpoint is signed as
 * the log grows, and its note carries no time of its own.
 */
function CheckpointAge({ size }: { readonly size: number }) {
  const newest = useQuery(ChangeFeedService.method.listChanges, { after: size >= 2 ? BigInt(size - 2) : undefined, limit: 1 });
  const loggedAt = newest.data?.changes[0]?.loggedAt;
  if (loggedAt === undefined) return null;
  return (
    <p className="checkpoint-age">
      Its newest record was logged <time dateTime={loggedAt}>{ageText(new Date(loggedAt))}</time>.
    </p>
  );
}
