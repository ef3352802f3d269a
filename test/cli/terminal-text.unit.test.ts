import { describe, expect, it } from "vitest";
import { terminal, terminalLines, terminalText } from "../../src/cli/terminal-text.js";
import { createTerminalWriter } from "../../src/cli/terminal-writer.js";

/**
 * The CLI's one rendering of outside text for a terminal, over every code point up to U+FFFF: what
 * it escapes, that what it leaves is safe, and that JSON put through it stays JSON with the same
 * values. test/abuse/cli-*.test.ts prove the same through the CLI's processes.
 */

/** Everything a terminal acts on or reorders by, as docs/cli.md ("What is printed") lists it. */
const UNSAFE = /[\p{Cc}\u2028\u2029\u202a-\u202e\u2066-\u2069]/u;

const everyCodePoint = Array.from({ length: 0x10000 }, (_, codePoint) => String.fromCharCode(codePoint)).filter(
  (character) => !/[\ud800-\udfff]/.test(character),
);

describe("terminalText", () => {
  it("escapes exactly the unsafe characters, each visibly, as JSON would", () => {
    const wrong = everyCodePoint.filter((character) => {
      const shown = terminalText(character);
      if (!UNSAFE.test(character)) return shown !== character;
      return !/^\\(u[0-9a-f]{4}|[bfnrt])$/.test(shown) || JSON.parse(`"${shown}"`) !== character;
    });
    expect(wrong.map((character) => `U+${character.charCodeAt(0).toString(16)}`)).toEqual([]);
    expect(everyCodePoint.filter((character) => terminalText(character) !== character)).toHaveLength(32 + 33 + 2 + 5 + 4);
  });

  it("keeps a value on one line and in one column", () => {
    expect(terminalText("a\nb\tc\rd")).toBe("a\\nb\\tc\\rd");
    expect(terminalText("\u001b]52;c;eA==\u0007")).toBe("\\u001b]52;c;eA==\\u0007");
  });
});

describe("terminalLines", () => {
  it("keeps line breaks and tabs and escapes every other unsafe character", () => {
    const text = everyCodePoint.join("");
    const shown = terminalLines(text);
    expect(shown.replace(/[\n\t]/g, "")).not.toMatch(UNSAFE);
    expect(shown.split("\n")).toHaveLength(2);
  });

  it("leaves JSON valid, with the exact values", () => {
    const value = { [everyCodePoint.slice(0, 0x300).join("")]: everyCodePoint.join(""), list: ["\u202e", "\u009b", "\u2028"] };
    for (const json of [JSON.stringify(value), JSON.stringify(value, null, 2)]) {
      const shown = terminalLines(json);
      expect(shown.replace(/\n/g, "")).not.toMatch(UNSAFE);
      expect(JSON.parse(shown)).toEqual(value);
    }
  });
});

describe("the terminal writer", () => {
  it("as a tag keeps the template's own text and escapes each value whole", () => {
    const written: string[] = [];
    const write = createTerminalWriter((text) => written.push(text));
    write`\r${"a\rb"}\t${"c\td"}\n`;
    write("line\none\u001b[2J\tcell\n");
    expect(written).toEqual(["\ra\\rb\tc\\td\n", "line\none\\u001b[2J\tcell\n"]);
  });

  it("terminal`...` builds the same text as a string", () => {
    expect(terminal`${"x\ny"}: ${42}\n`).toBe("x\\ny: 42\n");
  });
});
