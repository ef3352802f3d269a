import { terminal } from "./terminal-text.js";

/** One mark a version carries (docs/lifecycle.md) as people read it: its state, when, and why. */
export interface EntryMark {
  /** The state it puts the version in: `deprecated`, `yanked`, ... */
  readonly label: string;
  /** When; escaped for the terminal, as is `text`. */
  readonly at: string;
  /** The reason or note, with the replacement or policy. */
  readonly text: string;
}

/** A mark's member in the API's JSON: `deprecation`, `yank`, `quarantine`, `removal`, `archive`. */
interface MarkJson {
  readonly reason?: string;
  readonly replacement?: string;
  readonly policy?: string;
  readonly note?: string;
  readonly at?: string;
}

type EntryFields = Readonly<Record<string, unknown>>;
type MarkOf = (fields: EntryFields) => Omit<EntryMark, "label"> | undefined;

/** A mark kept in one member of the entry, its text made by `text`. */
function member(name: string, text: (mark: MarkJson) => string): MarkOf {
  return (fields) => {
    const mark = fields[name] as MarkJson | undefined;
    return mark === undefined ? undefined : { at: terminal`${mark.at ?? ""}`, text: text(mark) };
  };
}

const reason = (mark: MarkJson) => terminal`${mark.reason ?? ""}`;
const note = (mark: MarkJson) => terminal`${mark.note ?? ""} (policy ${mark.policy ?? ""})`;
const replacement = (mark: MarkJson) => (mark.replacement ? terminal` (replacement ${mark.replacement})` : "");

/** Every mark, in the order of docs/lifecycle.md's table. Revocation predates the others and keeps its two members. */
const MARKS: readonly (readonly [label: string, of: MarkOf])[] = [
  ["deprecated", member("deprecation", (mark) => reason(mark) + replacement(mark))],
  ["yanked", member("yank", reason)],
  ["quarantined", member("quarantine", note)],
  [
    "revoked",
    (fields) =>
      fields.revokedAt === undefined ? undefined : { at: terminal`${fields.revokedAt}`, text: terminal`${fields.revocationReason ?? ""}` },
  ],
  ["removed", member("removal", note)],
  ["archived", member("archive", reason)],
];

/** The marks an entry, in the API's JSON, carries. */
export function entryMarks(fields: EntryFields): EntryMark[] {
  return MARKS.flatMap(([label, of]) => {
    const mark = of(fields);
    return mark === undefined ? [] : [{ label, ...mark }];
  });
}

/** A mark as a line of describeEntry: `  yanked      2026-…Z: broken build`. */
export function markLine(mark: EntryMark): string {
  return `  ${mark.label.padEnd(11)} ${mark.at}: ${mark.text}`;
}

/** A mark as resolve's notice on stderr: `registry: did:…@1.2.0 is yanked: broken build`. */
export function markNotice(entryDid: unknown, mark: EntryMark): string {
  return `${terminal`registry: ${entryDid} is `}${mark.label}: ${mark.text}\n`;
}
