/**
 * Characters a terminal acts on or reorders a line by, instead of showing: C0 controls (ESC starts
 * colour, cursor and OSC 52 clipboard sequences; CR and LF start a line), DEL, C1 controls (CSI and
 * OSC on their own), the line and paragraph separators, and the bidi embeddings, overrides and
 * isolates. Every one is also left raw by JSON.stringify, or escaped by it the same way.
 */
const UNSAFE_FOR_TERMINAL = /[\p{Cc}\u2028\u2029\u202a-\u202e\u2066-\u2069]/gu;

/** What a composed text keeps: the line breaks and tabs its own lines and columns are made of. */
const LAYOUT = new Set(["\n", "\t"]);

/** JSON's own short escapes; every other unsafe character is written \uXXXX, as JSON writes it. */
const SHORT_ESCAPES: Readonly<Record<string, string>> = Object.freeze({ "\b": "\\b", "\t": "\\t", "\n": "\\n", "\f": "\\f", "\r": "\\r" });

function escapeOne(character: string): string {
  return SHORT_ESCAPES[character] ?? `\\u${character.charCodeAt(0).toString(16).padStart(4, "0")}`;
}

/**
 * A value from outside (a server's answer, a file, an argument) as text safe to print inside one
 * line: every unsafe character, line breaks and tabs included, escaped visibly the way JSON would
 * (`\u001b`, `\n`, `\u202e`), so it can neither drive the terminal nor start a line of its own.
 */
export function terminalText(value: unknown): string {
  return String(value).replace(UNSAFE_FOR_TERMINAL, escapeOne);
}

/**
 * Text the CLI composed of several lines or columns (usage, help, a message): the same escapes,
 * but its line breaks and tabs are kept. Applied to JSON text it keeps the JSON valid and its
 * values exact, since an unsafe character can only stand inside a JSON string, where `\uXXXX`
 * means that same character.
 */
export function terminalLines(text: string): string {
  return text.replace(UNSAFE_FOR_TERMINAL, (character) => (LAYOUT.has(character) ? character : escapeOne(character)));
}

/**
 * A tag for lines with values in them: ``terminal`published ${did}\n` `` keeps the template's own
 * text as written and puts each value through terminalText.
 */
export function terminal(strings: TemplateStringsArray, ...values: readonly unknown[]): string {
  return strings.reduce((text, literal, index) => text + literal + (index < values.length ? terminalText(values[index]) : ""), "");
}
