import { useQuery } from "@tanstack/react-query";
import { type Entry, servedEntryMismatch } from "../../../src/sdk/index.js";
import { historyQuery, pinnedLogKey, registryClient } from "../registry.js";

/**
 * The in-browser check of one version, with the log key this page pinned: the SDK's proveEntry
 * (the version's record is in a checkpoint signed by that key, and the publisher's signature holds),
 * then the name's verified history folded and compared with the entry the registry served.
 */
export function Verification({ entry }: { readonly entry: Entry }) {
  const logKey = pinnedLogKey();
  const bare = entry.entryDid.split("@")[0]!;
  const proof = useQuery({
    queryKey: ["prove-entry", entry.entryDid, logKey],
    queryFn: () => registryClient.proveEntry(entry.entryDid, logKey === undefined ? {} : { logKey }),
    retry: false,
  });
  const history = useQuery(historyQuery(bare));
  const mismatch = history.data === undefined ? undefined : servedEntryMismatch(entry, history.data.records);
  const state = proof.isPending || history.isPending ? "checking" : proof.isError || history.isError || mismatch ? "failed" : "verified";
  return (
    <section aria-labelledby="verification-heading" className="panel">
      <h2 id="verification-heading">Verification in this browser</h2>
      <output className="verification" aria-live="polite" data-state={state}>
        {state === "checking" && "Checking the signature and the log inclusion…"}
        {proof.isError && <span>Does not verify: {proof.error.message}</span>}
        {history.isError && <span>The history does not verify: {history.error.message}</span>}
        {mismatch !== undefined && (
          <span>
            The entry served differs from its log records in <code>{mismatch.field}</code>. A change the log has not integrated yet also
            shows this: reload to check again.
          </span>
        )}
        {state === "verified" && proof.data !== undefined && (
          <>
            <strong>Verified against checkpoint {proof.data.checkpoint.treeSize}</strong>: the publisher's signature holds, record{" "}
            {proof.data.record.index} ({proof.data.record.kind}) is in the log signed by {proof.data.checkpoint.origin}
            {proof.data.pinned ? " with the key this page pinned" : " (key taken from the server: not pinned)"}, and the entry served
            matches its log records.
          </>
        )}
      </output>
    </section>
  );
}
