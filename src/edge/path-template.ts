/**
 * google.api.http path templates (the grammar of google/api/http.proto):
 *
 *   Template = "/" Segments [ Verb ] ;
 *   Segments = Segment { "/" Segment } ;
 *   Segment  = "*" | "**" | LITERAL | Variable ;
 *   Variable = "{" FieldPath [ "=" Segments ] "}" ;
 *   FieldPath = IDENT { "." IDENT } ;
 *   Verb     = ":" LITERAL ;
 */

type Segment = { readonly kind: "literal"; readonly value: string } | { readonly kind: "any" } | { readonly kind: "rest" };

interface Variable {
  readonly fieldPath: string;
  readonly start: number;
  /** Exclusive; -1 when the variable runs to the end (it ends in "**"). */
  readonly end: number;
}

export interface PathTemplate {
  readonly source: string;
  readonly segments: readonly Segment[];
  readonly variables: readonly Variable[];
  readonly verb: string | undefined;
}

export class PathTemplateError extends Error {}

/**
 * A path that has a template's shape but a variable whose percent-encoding is malformed ("%ZZ", a
 * lone "%", bytes that are not UTF-8): the client sent a bad value for that field, not a path
 * that names nothing.
 */
export class PathEncodingError extends Error {
  constructor(readonly fieldPath: string) {
    super(`${fieldPath}: is not valid percent-encoded UTF-8`);
  }
}

export function parsePathTemplate(source: string): PathTemplate {
  if (!source.startsWith("/")) throw new PathTemplateError(`template must start with "/": ${source}`);
  const segments: Segment[] = [];
  const variables: Variable[] = [];
  let rest = source.slice(1);
  let verb: string | undefined;
  // A verb is a ":" after the last segment, outside any variable.
  const lastSlash = rest.lastIndexOf("/");
  const verbAt = rest.indexOf(":", Math.max(lastSlash, rest.lastIndexOf("}")));
  if (verbAt >= 0) {
    verb = rest.slice(verbAt + 1);
    rest = rest.slice(0, verbAt);
  }
  let position = 0;
  while (position <= rest.length) {
    if (rest[position] === "{") {
      const close = rest.indexOf("}", position);
      if (close < 0) throw new PathTemplateError(`unclosed variable in ${source}`);
      const [fieldPath = "", pattern = "*"] = rest.slice(position + 1, close).split("=", 2);
      const start = segments.length;
      for (const part of pattern.split("/")) segments.push(segmentOf(part, source));
      const runsToEnd = segments.at(-1)?.kind === "rest";
      variables.push({ fieldPath, start, end: runsToEnd ? -1 : segments.length });
      position = close + 1;
    } else {
      const slash = rest.indexOf("/", position);
      const part = rest.slice(position, slash < 0 ? rest.length : slash);
      segments.push(segmentOf(part, source));
      position += part.length;
    }
    if (position < rest.length && rest[position] !== "/") {
      throw new PathTemplateError(`expected "/" at ${position + 1} in ${source}`);
    }
    position++;
  }
  return { source, segments, variables, verb };
}

function segmentOf(part: string, source: string): Segment {
  if (part === "*") return { kind: "any" };
  if (part === "**") return { kind: "rest" };
  if (part === "" || /[{}]/.test(part)) throw new PathTemplateError(`bad segment "${part}" in ${source}`);
  return { kind: "literal", value: part };
}

/**
 * Matches a raw (still percent-encoded) request path. Returns the decoded value of each variable
 * by field path, or undefined when the path does not match; throws PathEncodingError when it
 * matches but a variable cannot be decoded.
 */
export function matchPathTemplate(template: PathTemplate, rawPath: string): Map<string, string> | undefined {
  let path = rawPath;
  if (template.verb !== undefined) {
    if (!path.endsWith(`:${template.verb}`)) return undefined;
    path = path.slice(0, -template.verb.length - 1);
  }
  if (!path.startsWith("/")) return undefined;
  const parts = path.slice(1).split("/");
  const { segments } = template;
  const endsWithRest = segments.at(-1)?.kind === "rest";
  if (endsWithRest ? parts.length < segments.length - 1 : parts.length !== segments.length) {
    return undefined;
  }
  for (let index = 0; index < segments.length; index++) {
    const segment = segments[index] as Segment;
    const part = parts[index];
    if (segment.kind === "rest") break;
    if (part === undefined || part === "") return undefined;
    if (segment.kind === "literal" && segment.value !== part) return undefined;
  }
  const values = new Map<string, string>();
  for (const variable of template.variables) {
    const captured = parts.slice(variable.start, variable.end < 0 ? undefined : variable.end);
    const multiSegment = variable.end < 0 || variable.end - variable.start > 1;
    const value = decodeVariable(captured, multiSegment);
    if (value === undefined) throw new PathEncodingError(variable.fieldPath);
    values.set(variable.fieldPath, value);
  }
  return values;
}

/**
 * A single-segment variable decodes every escape; a multi-segment one keeps "%2F" so a decoded
 * "/" cannot be confused with a separator (the rule of google.api.http).
 */
function decodeVariable(parts: string[], multiSegment: boolean): string | undefined {
  try {
    if (!multiSegment) return decodeURIComponent(parts[0] ?? "");
    return parts.map((part) => decodeURIComponent(part.replace(/%2F/gi, "%252F"))).join("/");
  } catch {
    return undefined;
  }
}
