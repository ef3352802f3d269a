import { useQuery } from "@tanstack/react-query";
import { pinnedLogKey, registryClient } from "../registry.js";

/**
 * The in-browser check of one version: the SDK's proveEntry fetches its log record, inclusion proof
 * and the latest checkpoint, and verifies the publisher's signature, the inclusion and the
 * checkpoint's signature by the log key this page pinned. No trust in what the page was told.
 */
export function Verification({ did }: { readonly did: string }) {
  const logKey = pinnedLogKey();
  const proof = useQuery({
    queryKey: ["prove-entry", did, logKey],
    queryFn: () => registryClient.proveEntry(did, logKey === undefined ? {} : { logKey }),
    retry: false,
  });
  return (
    <section aria-labelledby="verification-heading" className="panel">
      <h2 id="verification-heading">Verification in this browser</h2>
      <output className="verification" aria-live="polite" data-state={proof.isPending ? "checking" : proof.isError ? "failed" : "verified"}>
        {proof.isPending && "Checking the signature and the log inclusion…"}
        {proof.isError && `Does not verify: ${proof.error.message}`}
        {proof.data !== undefined && (
          <>
            <strong>Verified against checkpoint {proof.data.checkpoint.treeSize}</strong>: the publisher's signature holds and record{" "}
            {proof.data.record.index} ({proof.data.record.kind}) is in the log signed by {proof.data.checkpoint.origin}
            {proof.data.pinned ? " with the key this page pinned" : " (key taken from the server: not pinned)"}.
          </>
        )}
      </output>
    </section>
  );
}
