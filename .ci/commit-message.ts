/**
 * The rule for a commit message: a subject under 72 characters that says what the commit does,
 * not what was done (no past tense, no closing period), then a blank line and a body saying why.
 */
export const MAX_SUBJECT_CHARS = 71;

/**
 * The past tenses commit subjects start with. A list rather than every word in "-ed": subjects that
 * name a thing first ("Signed notes: ...", "Shared limits use Redis") must pass, and a false alarm
 * fails CI.
 */
const PAST_TENSE: ReadonlySet<string> = new Set(
  `added adjusted allowed applied bumped changed checked cleaned converted corrected created
  deleted disabled documented dropped enabled extracted fixed handled implemented improved
  introduced made merged moved optimised optimized ran refactored reformatted removed renamed
  reordered replaced resolved reverted rewrote simplified switched tidied tweaked updated upgraded
  wrote`.split(/\s+/),
);

/** What is wrong with a commit message, one sentence a problem; empty when it keeps the rule. */
export function commitMessageProblems(message: string): string[] {
  const [subject = "", separator, ...rest] = message.replace(/\r\n/g, "\n").trimEnd().split("\n");
  const problems: string[] = [];
  if (subject.trim() === "") return ["the subject is empty"];
  if (subject.length > MAX_SUBJECT_CHARS) {
    problems.push(`the subject has ${subject.length} characters; keep it under ${MAX_SUBJECT_CHARS + 1}`);
  }
  if (subject.endsWith(".")) problems.push("the subject ends with a period");
  const past = leadingWords(subject).find(isPastTense);
  if (past !== undefined) problems.push(`the subject says "${past}", past tense; say what the commit does ("Add", "Fix", ...)`);
  if (separator !== undefined && separator.trim() !== "") problems.push("the line after the subject is not blank");
  else if (!rest.some((line) => line.trim() !== ""))
    problems.push("there is no body: a blank line after the subject, then why the change is made");
  return problems;
}

/** The subject's first word, and the first word after a leading "scope:" if it has one. */
function leadingWords(subject: string): string[] {
  const words = [subject.split(/\s+/)[0] ?? ""];
  const scoped = /^[^\s:]+(?: [^\s:]+)?: +(\S+)/.exec(subject);
  if (scoped?.[1] !== undefined) words.push(scoped[1]);
  return words.map((word) => word.replace(/\W+$/, ""));
}

function isPastTense(word: string): boolean {
  return PAST_TENSE.has(word.toLowerCase());
}
