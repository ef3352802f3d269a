/**
 * Joins each `--name value` of an option that takes a value into `--name=value`, for node's
 * parseArgs. On its own, parseArgs refuses a value that starts with "-" as ambiguous, and one
 * generated key in 64 has base64url text starting with "-": `--key -AAAA…` must mean the key.
 * Only options declared as taking a value are joined, so flags and positionals are untouched;
 * nothing after `--` is looked at.
 */
export function joinOptionValues(args: readonly string[], options: Readonly<Record<string, { type: string; short?: string }>>): string[] {
  const takesValue = new Set<string>();
  for (const [name, spec] of Object.entries(options)) {
    if (spec.type !== "string") continue;
    takesValue.add(`--${name}`);
    if (spec.short !== undefined) takesValue.add(`-${spec.short}`);
  }
  const joined: string[] = [];
  for (let index = 0; index < args.length; index++) {
    const arg = args[index]!;
    if (arg === "--") {
      joined.push(...args.slice(index));
      break;
    }
    const value = args[index + 1];
    if (takesValue.has(arg) && value?.startsWith("-") && value !== "--") {
      joined.push(`${arg}=${value}`);
      index++;
    } else {
      joined.push(arg);
    }
  }
  return joined;
}
