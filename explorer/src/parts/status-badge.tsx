/** A version's status as a word (never colour alone), styled by its severity. */
export function StatusBadge({ status }: { readonly status: string }) {
  return <span className={`status status-${status.replace(/[^a-z]/g, "")}`}>{status || "unknown"}</span>;
}
