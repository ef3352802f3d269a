import { readdirSync, readFileSync } from "node:fs";
import { isBuiltin } from "node:module";
import { fileURLToPath } from "node:url";
import ts from "typescript";
import { describe, expect, it } from "vitest";

/**
 * The SDK verifies proofs in browsers, so nothing in src/transparency imports a Node built-in. Only the
 * file that binds node:crypto's SHA-256 for the server may.
 */

const FOLDER = fileURLToPath(new URL("../../src/transparency/", import.meta.url));
const NODE_BINDING = "node-merkle-hasher.ts";

function importSpecifiers(file: string): string[] {
  const source = ts.createSourceFile(file, readFileSync(FOLDER + file, "utf8"), ts.ScriptTarget.Latest, true);
  const specifiers: string[] = [];
  const visit = (node: ts.Node) => {
    if ((ts.isImportDeclaration(node) || ts.isExportDeclaration(node)) && node.moduleSpecifier) {
      specifiers.push((node.moduleSpecifier as ts.StringLiteral).text);
    }
    if (ts.isCallExpression(node) && node.expression.kind === ts.SyntaxKind.ImportKeyword) {
      specifiers.push((node.arguments[0] as ts.StringLiteral).text);
    }
    ts.forEachChild(node, visit);
  };
  visit(source);
  return specifiers;
}

describe("src/transparency stays browser-safe", () => {
  const files = readdirSync(FOLDER).filter((name) => name.endsWith(".ts") && name !== NODE_BINDING);

  it("has modules to check", () => {
    expect(files).toContain("verify.ts");
  });

  it.each(files)("%s imports no Node built-in", (file) => {
    expect(importSpecifiers(file).filter((specifier) => isBuiltin(specifier))).toEqual([]);
  });

  it("no pure module imports the node binding", () => {
    for (const file of files) expect(importSpecifiers(file)).not.toContain("./node-merkle-hasher.js");
  });
});
