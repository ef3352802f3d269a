import { readdirSync, readFileSync } from "node:fs";
import { join, relative } from "node:path";
import { fileURLToPath } from "node:url";
import ts from "typescript";
import { describe, expect, it } from "vitest";

/**
 * Every human line of the CLI puts its values through terminalText (docs/cli.md, "What is
 * printed"). The writers escape every control character of a string anyway; what only the tag
 * form does is keep a value's line breaks and tabs from starting a line or a column of its own. So
 * a string handed to a writer must not splice a value in raw: read from the sources, every write
 * in src/cli is named by file and line when it does, and so is a write that bypasses the writers.
 */

const REPO = fileURLToPath(new URL("../../", import.meta.url));

/** Calls that build safe text: the tag and the escapes, and JSON (whose strings hold no raw line break or tab). */
const SAFE_BUILDERS = new Set(["terminal", "terminalText", "terminalLines", "JSON.stringify"]);

interface Finding {
  readonly at: string;
  readonly text: string;
}

function sourceFiles(folder: string): string[] {
  return readdirSync(join(REPO, folder), { recursive: true, withFileTypes: true })
    .filter((entry) => entry.isFile() && entry.name.endsWith(".ts"))
    .map((entry) => relative(REPO, join(entry.parentPath, entry.name)))
    .sort();
}

/** Whether an expression handed to a writer as a string is text the CLI composed: no raw value in it. */
function isComposed(node: ts.Expression): boolean {
  if (ts.isParenthesizedExpression(node)) return isComposed(node.expression);
  if (ts.isStringLiteralLike(node) || ts.isIdentifier(node)) return true;
  if (ts.isConditionalExpression(node)) return isComposed(node.whenTrue) && isComposed(node.whenFalse);
  if (ts.isBinaryExpression(node) && node.operatorToken.kind === ts.SyntaxKind.PlusToken)
    return isComposed(node.left) && isComposed(node.right);
  if (ts.isTaggedTemplateExpression(node)) return node.tag.getText() === "terminal";
  // A call composes its own text (describeEntry, a table, a row): what such a function returns is not followed here.
  if (ts.isCallExpression(node)) return true;
  if (ts.isTemplateExpression(node))
    return node.templateSpans.every(
      (span) => ts.isCallExpression(span.expression) && SAFE_BUILDERS.has(span.expression.expression.getText()),
    );
  return false;
}

function isWriter(callee: ts.Expression): boolean {
  const name = ts.isPropertyAccessExpression(callee) ? callee.name.text : ts.isIdentifier(callee) ? callee.text : "";
  return name === "stdout" || name === "stderr";
}

/** process.stdout.write, process.stderr.write, console.*: ways out that no writer escapes. */
function isBypass(callee: ts.Expression): boolean {
  const text = callee.getText();
  return /^process\.std(out|err)\.write$/.test(text) || /^console\.\w+$/.test(text);
}

/** Inside the sink a writer is made of, or writing text already escaped (run.ts's last resort). */
function isSanctionedBypass(call: ts.CallExpression): boolean {
  const [argument] = call.arguments;
  if (argument !== undefined && ts.isCallExpression(argument) && argument.expression.getText() === "terminalLines") return true;
  for (let node: ts.Node | undefined = call.parent; node !== undefined; node = node.parent) {
    if (ts.isCallExpression(node) && node.expression.getText() === "createTerminalWriter") return true;
  }
  return false;
}

function findingsIn(file: string, text = readFileSync(join(REPO, file), "utf8")): Finding[] {
  const source = ts.createSourceFile(file, text, ts.ScriptTarget.Latest, true, ts.ScriptKind.TS);
  const findings: Finding[] = [];
  const visit = (node: ts.Node) => {
    if (ts.isCallExpression(node)) {
      const at = `${file}:${source.getLineAndCharacterOfPosition(node.getStart()).line + 1}`;
      const [argument] = node.arguments;
      if (isWriter(node.expression) && argument !== undefined && !isComposed(argument)) findings.push({ at, text: node.getText() });
      if (isBypass(node.expression) && !isSanctionedBypass(node)) findings.push({ at, text: node.getText() });
    }
    ts.forEachChild(node, visit);
  };
  visit(source);
  return findings;
}

describe("the CLI's writes", () => {
  const files = sourceFiles("src/cli");

  it("never splice a value raw into a string, nor go around the writers", () => {
    expect(files.flatMap((file) => findingsIn(file))).toEqual([]);
  });

  it("are what this test reads: a raw splice and a bypass are found", () => {
    const probe = [
      "context.stdout(`x ${value}\\n`);",
      "io.stderr(error.message);",
      "process.stdout.write(value);",
      "console.log(value);",
      "context.stdout`x ${value}\\n`;",
      "context.stdout(`${JSON.stringify(value)}\\n`);",
      "io.stderr(terminal`x ${value}\\n` + USAGE);",
    ].join("\n");
    expect(findingsIn("src/cli/probe.ts", probe)).toEqual([
      { at: "src/cli/probe.ts:1", text: "context.stdout(`x ${value}\\n`)" },
      { at: "src/cli/probe.ts:2", text: "io.stderr(error.message)" },
      { at: "src/cli/probe.ts:3", text: "process.stdout.write(value)" },
      { at: "src/cli/probe.ts:4", text: "console.log(value)" },
    ]);
  });
});
