import { readdirSync, readFileSync } from "node:fs";
import { isBuiltin } from "node:module";
import { dirname, join, relative, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import ts from "typescript";
import { describe, expect, it } from "vitest";

/**
 * Dependencies point inwards (docs/architecture.md). Read from the sources' import statements, so a
 * violation is named by file, line and import, whether the import is a value, a type or a dynamic
 * import() (a type import couples a capability to a driver as surely as a value import does).
 */

const REPO = fileURLToPath(new URL("../../", import.meta.url));

/** The inner rings: interfaces in domain words and pure logic. */
const CAPABILITY_FOLDERS = [
  "src/domain",
  "src/entries",
  "src/discovery",
  "src/auth",
  "src/rate-limits",
  "src/changes",
  "src/transparency",
  "src/mirror",
];

/** The outer rings: adapters, protocols, the command line, instrumentation, the composition root. */
const OUTER_PATHS = ["src/storage/", "src/edge/", "src/cli/", "src/observability/", "src/app.ts"];

/** Database and cache clients: only src/storage (and the instrumentation that watches knex) may use them. */
const DRIVER_PACKAGES = ["knex", "pg", "@electric-sql/pglite", "redis", "@redis", "ioredis"];

/**
 * The transport (protocol server, exchange, invoker, framing) stands alone: it knows node, Connect
 * and protobuf, and nothing of the registry, so it can be read, tested and upgraded on its own.
 */
const TRANSPORT_PACKAGES = ["@connectrpc/connect", "@bufbuild/protobuf"];

/** Libraries that only compute; the domain may use these and no other package. */
const PURE_PACKAGES = ["@noble/ed25519", "@scure/base", "canonicalize", "semver", "spdx-expression-parse"];

/**
 * The domain is deterministic: node:crypto for hashing, HMAC, constant-time comparison, key parsing
 * and signature verification, never for randomness (tokens and keys are drawn in src/auth).
 */
const DETERMINISTIC_CRYPTO = ["createHash", "createHmac", "timingSafeEqual", "createPublicKey", "verify", "KeyObject"];

interface ImportSite {
  /** Repository-relative, e.g. src/auth/token-issuer.ts. */
  readonly file: string;
  readonly line: number;
  readonly specifier: string;
  /** For a relative specifier, the repository-relative file it names (.js read as .ts). */
  readonly target: string | undefined;
  /** The names a static import or re-export takes; undefined when it takes the whole module. */
  readonly names: readonly string[] | undefined;
}

function sourceFiles(folder: string): string[] {
  return readdirSync(join(REPO, folder), { recursive: true, withFileTypes: true })
    .filter((entry) => entry.isFile() && (entry.name.endsWith(".ts") || entry.name.endsWith(".tsx")))
    .map((entry) => relative(REPO, join(entry.parentPath, entry.name)))
    .sort();
}

function importsOf(file: string): ImportSite[] {
  const text = readFileSync(join(REPO, file), "utf8");
  const source = ts.createSourceFile(
    file,
    text,
    ts.ScriptTarget.Latest,
    true,
    file.endsWith(".tsx") ? ts.ScriptKind.TSX : ts.ScriptKind.TS,
  );
  const sites: ImportSite[] = [];
  const record = (node: ts.Node, literal: ts.Expression | undefined, names: readonly string[] | undefined) => {
    if (literal === undefined || !ts.isStringLiteralLike(literal)) return;
    const specifier = literal.text;
    const target = specifier.startsWith(".")
      ? relative(REPO, resolve(join(REPO, dirname(file)), specifier)).replace(/\.js$/, ".ts")
      : undefined;
    const line = source.getLineAndCharacterOfPosition(node.getStart(source)).line + 1;
    sites.push({ file, line, specifier, target, names });
  };
  const visit = (node: ts.Node) => {
    if (ts.isImportDeclaration(node)) {
      record(node, node.moduleSpecifier, importedNames(node.importClause));
    } else if (ts.isExportDeclaration(node)) {
      const clause = node.exportClause;
      const names = clause !== undefined && ts.isNamedExports(clause) ? clause.elements.map(elementName) : undefined;
      record(node, node.moduleSpecifier, names);
    } else if (ts.isImportEqualsDeclaration(node) && ts.isExternalModuleReference(node.moduleReference)) {
      record(node, node.moduleReference.expression, undefined);
    } else if (ts.isCallExpression(node) && isImportOrRequire(node)) {
      record(node, node.arguments[0], undefined);
    } else if (ts.isImportTypeNode(node) && ts.isLiteralTypeNode(node.argument)) {
      record(node, node.argument.literal, undefined);
    }
    ts.forEachChild(node, visit);
  };
  visit(source);
  return sites;
}

function importedNames(clause: ts.ImportClause | undefined): readonly string[] | undefined {
  if (clause === undefined) return []; // a side-effect import takes no names
  if (clause.name !== undefined) return undefined; // a default import is the whole module
  const bindings = clause.namedBindings;
  if (bindings === undefined) return [];
  return ts.isNamedImports(bindings) ? bindings.elements.map(elementName) : undefined;
}

function elementName(element: ts.ImportSpecifier | ts.ExportSpecifier): string {
  return (element.propertyName ?? element.name).text;
}

function isImportOrRequire(call: ts.CallExpression): boolean {
  return call.expression.kind === ts.SyntaxKind.ImportKeyword || (ts.isIdentifier(call.expression) && call.expression.text === "require");
}

function isPackage(specifier: string, name: string): boolean {
  return specifier === name || specifier.startsWith(`${name}/`);
}

/** What is wrong with an import from a capability folder, if anything. */
function capabilityViolation(site: ImportSite): string | undefined {
  const driver = DRIVER_PACKAGES.find((name) => isPackage(site.specifier, name));
  if (driver !== undefined) return `a database or cache client (${driver}) belongs in src/storage`;
  const outer = site.target === undefined ? undefined : OUTER_PATHS.find((path) => site.target!.startsWith(path));
  if (outer !== undefined) return `capability code must not depend on ${outer}`;
  return undefined;
}

/** What is wrong with an import from src/domain beyond the capability rule, if anything. */
function domainViolation(site: ImportSite): string | undefined {
  if (site.target !== undefined) {
    const inside = site.target.startsWith("src/domain/") || site.target === "src/errors.ts";
    return inside ? undefined : "the domain imports only itself and src/errors.ts";
  }
  if (isBuiltin(site.specifier)) {
    if (site.specifier !== "node:crypto") return "the domain does no I/O: of node's modules it uses node:crypto only";
    if (site.names === undefined) return "name the node:crypto functions the domain uses, so none of them draws randomness";
    const others = site.names.filter((name) => !DETERMINISTIC_CRYPTO.includes(name));
    if (others.length > 0) return `the domain is deterministic: ${others.join(", ")} is not among ${DETERMINISTIC_CRYPTO.join(", ")}`;
    return undefined;
  }
  if (!PURE_PACKAGES.some((name) => isPackage(site.specifier, name))) {
    return `the domain uses only libraries that compute (${PURE_PACKAGES.join(", ")})`;
  }
  return undefined;
}

/** What is wrong with an import from src/transport, if anything. */
function transportViolation(site: ImportSite): string | undefined {
  if (site.target !== undefined) return site.target.startsWith("src/transport/") ? undefined : "the transport imports only its own files";
  if (isBuiltin(site.specifier) || TRANSPORT_PACKAGES.some((name) => isPackage(site.specifier, name))) return undefined;
  return `the transport uses node, ${TRANSPORT_PACKAGES.join(" and ")} only`;
}

/**
 * What is wrong with an import from explorer/src, if anything: it is browser code, built into the
 * page, so it reaches the registry only as any client does, through the SDK and the descriptors.
 */
function explorerViolation(site: ImportSite): string | undefined {
  if (site.target !== undefined) {
    if (site.target === "src/sdk/node.ts") return "the explorer runs in a browser: not the SDK's node entry";
    const allowed = ["explorer/src/", "src/sdk/", "gen/"].some((folder) => site.target!.startsWith(folder));
    return allowed ? undefined : "the explorer imports only its own files, src/sdk and gen/";
  }
  if (isBuiltin(site.specifier)) return "the explorer runs in a browser: no node module";
  if (EXPLORER_PACKAGES.some((name) => isPackage(site.specifier, name))) return undefined;
  return `the explorer's packages are ${EXPLORER_PACKAGES.join(", ")}`;
}

/** What the explorer's page is built from besides the SDK: React, its query cache, Connect for the browser. */
const EXPLORER_PACKAGES = [
  "react",
  "react-dom",
  "@tanstack/react-query",
  "@connectrpc/connect",
  "@connectrpc/connect-web",
  "@connectrpc/connect-query",
  "@bufbuild/protobuf",
];

/**
 * The files that import each other in a circle, one list per circle: each strongly connected
 * component of the import graph (Tarjan's algorithm) larger than one file, or a file importing itself.
 */
function importCycles(files: readonly string[]): string[][] {
  const edges = new Map(
    files.map((file) => [file, new Set(importsOf(file).flatMap((site) => (site.target === undefined ? [] : [site.target])))]),
  );
  const index = new Map<string, number>();
  const low = new Map<string, number>();
  const stack: string[] = [];
  const onStack = new Set<string>();
  const cycles: string[][] = [];
  const visit = (file: string) => {
    index.set(file, index.size);
    low.set(file, index.get(file)!);
    stack.push(file);
    onStack.add(file);
    for (const next of edges.get(file)!) {
      if (!edges.has(next)) continue;
      if (!index.has(next)) {
        visit(next);
        low.set(file, Math.min(low.get(file)!, low.get(next)!));
      } else if (onStack.has(next)) {
        low.set(file, Math.min(low.get(file)!, index.get(next)!));
      }
    }
    if (low.get(file) !== index.get(file)) return;
    const component: string[] = [];
    let member: string;
    do {
      member = stack.pop()!;
      onStack.delete(member);
      component.push(member);
    } while (member !== file);
    if (component.length > 1 || edges.get(file)!.has(file)) cycles.push(component.sort());
  };
  for (const file of files) if (!index.has(file)) visit(file);
  return cycles;
}

function violations(folders: readonly string[], rule: (site: ImportSite) => string | undefined): string[] {
  return folders
    .flatMap(sourceFiles)
    .flatMap(importsOf)
    .flatMap((site) => {
      const problem = rule(site);
      return problem === undefined ? [] : [`${site.file}:${site.line} imports "${site.specifier}": ${problem}`];
    });
}

describe("dependencies point inwards", () => {
  it("the import reader sees type-only, value, dynamic and named imports where they are", () => {
    // Files outside the rule that do what a violation would, so the reader is known to see them.
    const specifiers = (file: string) => importsOf(file).map((site) => site.specifier);
    expect(specifiers("src/storage/knex-auth-repository.ts")).toContain("knex"); // import type
    expect(specifiers("src/storage/redis-bucket-store.ts")).toContain("redis"); // await import()
    expect(importsOf("src/storage/postgres-bucket-store.ts")).toContainEqual(
      expect.objectContaining({ specifier: "./prepared-query.js", target: "src/storage/prepared-query.ts" }),
    );
    expect(importsOf("src/auth/token-issuer.ts")).toContainEqual(
      expect.objectContaining({ specifier: "node:crypto", names: ["randomBytes"] }),
    );
    const knexImport = importsOf("src/storage/postgres-bucket-store.ts").find((site) => site.specifier === "knex");
    expect(capabilityViolation(knexImport!)).toMatch(/knex.*belongs in src\/storage/);
  });

  it("no capability folder or the domain imports a database or cache client, storage, the edge, the CLI, observability or app.ts", () => {
    expect(violations(CAPABILITY_FOLDERS, capabilityViolation)).toEqual([]);
  });

  it("the domain imports only itself, src/errors.ts, deterministic node:crypto functions and libraries that compute", () => {
    expect(violations(["src/domain"], domainViolation)).toEqual([]);
  });

  it("the transport imports only itself, node, @connectrpc/connect and @bufbuild/protobuf", () => {
    expect(violations(["src/transport"], transportViolation)).toEqual([]);
    // The rule sees a violation where one would be: the edge's imports of the registry's errors.
    expect(importsOf("src/edge/error-mapping.ts").map(transportViolation)).toContain("the transport imports only its own files");
  });

  it("the explorer imports only itself, the SDK, the generated descriptors and browser packages", () => {
    expect(sourceFiles("explorer/src").length).toBeGreaterThan(0);
    expect(violations(["explorer/src"], explorerViolation)).toEqual([]);
    const site = (specifier: string, target?: string) => ({ file: "explorer/src/x.tsx", line: 1, specifier, target, names: undefined });
    expect(explorerViolation(site("../../src/app.js", "src/app.ts"))).toMatch(/only its own files/);
    expect(explorerViolation(site("../../src/sdk/node.js", "src/sdk/node.ts"))).toMatch(/node entry/);
    expect(explorerViolation(site("knex"))).toMatch(/packages are/);
    expect(explorerViolation(site("@connectrpc/connect-node"))).toMatch(/packages are/);
    expect(explorerViolation(site("react-dom/client"))).toBeUndefined();
  });

  it("the cycle finder finds a circle, and no file in src/ imports itself through others", () => {
    // test/architecture/fixtures: a.ts imports b.ts imports c.ts imports a.ts; d.ts imports a.ts.
    const fixtures = sourceFiles("test/architecture/fixtures/import-cycle");
    expect(importCycles(fixtures)).toEqual([fixtures.filter((file) => !file.endsWith("d.ts"))]);
    expect(importCycles(sourceFiles("src"))).toEqual([]);
  });
});
