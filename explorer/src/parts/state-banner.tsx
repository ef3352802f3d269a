import type { Entry } from "../../../src/sdk/index.js";
import { entryHref, publisherHref } from "../router.js";
import { TimeText } from "./time-text.js";

/** One state that applies to a version (CONTRACT-HISTORY section 11), in the words a reader needs. */
interface StateNote {
  readonly title: string;
  readonly why: string;
  readonly by: string;
  readonly at: string;
  readonly replacement?: string;
  readonly severe: boolean;
}

/** Every state that applies, most severe first: the banner shows each, so deprecated and yanked show both. */
export function stateNotes(entry: Entry): StateNote[] {
  const notes: StateNote[] = [];
  if (entry.removal)
    notes.push({
      title: "Removed by a moderator",
      why: policyText(entry.removal),
      by: entry.removal.by,
      at: entry.removal.at,
      severe: true,
    });
  // The entry does not say who revoked it (its publisher or a moderator): the history does.
  if (entry.revokedAt) notes.push({ title: "Revoked", why: entry.revocationReason ?? "", by: "", at: entry.revokedAt, severe: true });
  if (entry.quarantine)
    notes.push({
      title: "Quarantined by a moderator",
      why: policyText(entry.quarantine),
      by: entry.quarantine.by,
      at: entry.quarantine.at,
      severe: true,
    });
  if (entry.yank) notes.push({ title: "Yanked", why: entry.yank.reason, by: entry.yank.by, at: entry.yank.at, severe: true });
  if (entry.deprecation)
    notes.push({
      title: "Deprecated",
      why: entry.deprecation.reason,
      by: entry.deprecation.by,
      at: entry.deprecation.at,
      replacement: entry.deprecation.replacement,
      severe: false,
    });
  if (entry.archive)
    notes.push({
      title: "Archived: no new versions",
      why: entry.archive.reason,
      by: entry.archive.by,
      at: entry.archive.at,
      severe: false,
    });
  return notes;
}

function policyText(moderation: { readonly policy: string; readonly note: string }): string {
  return [moderation.policy, moderation.note].filter((part) => part !== "").join(": ");
}

export function StateBanner({ entry }: { readonly entry: Entry }) {
  const notes = stateNotes(entry);
  if (notes.length === 0) return null;
  return (
    <section
      className={`state-banner${notes.some((note) => note.severe) ? " severe" : ""}`}
      aria-label="State of this version"
      role="status"
    >
      {notes.map((note) => (
        <div key={note.title} className="state-note">
          <h2>{note.title}</h2>
          {note.why !== "" && <p className="state-reason">Reason: {note.why}</p>}
          {note.replacement !== undefined && note.replacement !== "" && (
            <p>
              Use instead: <a href={entryHref(note.replacement)}>{note.replacement}</a>
            </p>
          )}
          <p className="state-by">
            {note.by === "" ? (
              "On "
            ) : (
              <>
                By <a href={publisherHref(note.by)}>{shortDid(note.by)}</a> on{" "}
              </>
            )}
            <TimeText at={note.at} />
          </p>
        </div>
      ))}
    </section>
  );
}

/** A did:key is long; the page shows its start and end, the link and title carry it whole. */
export function shortDid(did: string): string {
  return did.length > 32 ? `${did.slice(0, 20)}…${did.slice(-8)}` : did;
}
