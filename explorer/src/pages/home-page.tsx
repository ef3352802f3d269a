import { useQuery } from "@connectrpc/connect-query";
import { TransparencyLogService } from "../../../gen/registry/v1/transparency_log_service_pb.js";
import { RecentChanges } from "../parts/recent-changes.js";
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
          <p className="log-size">
            <strong>{size.toLocaleString()}</strong> records in the latest signed checkpoint. <a href="/log">See the log</a>
          </p>
        )}
      </section>
      {size !== undefined && <RecentChanges logSize={size} />}
    </>
  );
}
