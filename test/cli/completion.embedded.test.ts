import { execFileSync } from "node:child_process";
import { writeFile } from "node:fs/promises";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { childEnv, runCli, temporaryDirectory } from "../support/child-processes.js";

/**
 * `registry completion bash|zsh`: each script is sourced into a real shell, which is asked to
 * complete command lines as it would on a TAB press; the commands it offers are the ones
 * `registry --help` lists, so the script follows the program rather than a list kept by hand.
 */

const CLI_MS = 120_000;

let scratch: { path: string; remove(): Promise<void> };
let bashScript: string;
let zshScript: string;
let helpCommands: string[];

const hasZsh = (() => {
  try {
    execFileSync("zsh", ["-fc", "true"]);
    return true;
  } catch {
    return false;
  }
})();

beforeAll(async () => {
  scratch = await temporaryDirectory("cli-completion-");
  const [bash, zsh, help] = await Promise.all(
    [["completion", "bash"], ["completion", "zsh"], ["--help"]].map((args) => runCli(args, childEnv({}))),
  );
  for (const result of [bash, zsh, help]) expect(result!.code, result!.stderr).toBe(0);
  bashScript = join(scratch.path, "registry.bash");
  zshScript = join(scratch.path, "_registry");
  await writeFile(bashScript, bash!.stdout);
  await writeFile(zshScript, zsh!.stdout);
  // The "Commands:" section of the help: each line starts with two spaces and the command's name.
  const commandsSection = help!.stdout.split("Commands:\n")[1]!.split("\n\n")[0]!;
  helpCommands = commandsSection
    .split("\n")
    .filter((line) => /^ {2}\S/.test(line))
    .map((line) => line.trim().split(/\s/)[0]!);
}, CLI_MS);

afterAll(async () => {
  await scratch?.remove();
});

/** What bash completes for `words`, the last being the word under the cursor, as bash's TAB would call the function. */
function bashCompletes(...words: string[]): string[] {
  const program = `source "$1"; shift; COMP_WORDS=("$@"); COMP_CWORD=$(( $# - 1 )); complete -p registry >/dev/null || exit 3
    $(complete -p registry | sed -E 's/.* -F ([^ ]+) .*/\\1/') registry "\${COMP_WORDS[COMP_CWORD]}" "\${COMP_WORDS[COMP_CWORD-1]}"
    printf '%s\\n' "\${COMPREPLY[@]}"`;
  const output = execFileSync("bash", ["--norc", "--noprofile", "-c", program, "bash", bashScript, "registry", ...words], {
    encoding: "utf8",
  });
  return output.split("\n").filter((line) => line !== "");
}

/**
 * What zsh offers for each command line (compadd's candidates, or "(files)"), the last word being
 * the one under the cursor, with compinit loaded as in a shell: one zsh for them all, compinit being slow.
 */
function zshCompletes(lines: readonly (readonly string[])[]): string[][] {
  const calls = lines.map(
    (words) => `words=(registry ${words.map((word) => `'${word}'`).join(" ")}); CURRENT=$#words; $_comps[registry]; print -r -- '%%'`,
  );
  const program = `autoload -U compinit && compinit -u -D
    source "$1"
    compadd() { [[ $1 == -- ]] && shift; print -rl -- "$@" }
    _files() { print -r -- "(files)" }
    ${calls.join("\n")}`;
  const output = execFileSync("zsh", ["-f", "-c", program, "zsh", zshScript], { encoding: "utf8" });
  return output
    .split("%%\n")
    .slice(0, lines.length)
    .map((block) => block.split("\n").filter((line) => line !== ""));
}

describe("registry completion bash", () => {
  it("offers every command the help lists, and only those with a prefix", () => {
    expect(helpCommands).toContain("publish");
    expect(helpCommands).toContain("completion");
    expect(bashCompletes("").sort()).toEqual([...helpCommands].sort());
    expect(bashCompletes("pu")).toEqual(["publish"]);
    expect(bashCompletes("un").sort()).toEqual(["unarchive", "undeprecate", "unquarantine", "unyank"]);
  });

  it("completes subcommands, options, option choices and argument choices", () => {
    expect(bashCompletes("root-token", "")).toEqual(["create", "list", "revoke", "help"]);
    expect(bashCompletes("publish", "--dr")).toEqual(["--dry-run"]);
    expect(bashCompletes("discover", "--transport", "grpc")).toEqual(["grpc-web", "grpc"]);
    expect(bashCompletes("quarantine", "did:x", "--policy", "")).toEqual([
      "malware",
      "phishing",
      "impersonation",
      "spam",
      "legal",
      "other",
    ]);
    expect(bashCompletes("completion", "")).toEqual(["bash", "zsh"]);
    expect(bashCompletes("help", "who")).toEqual(["whoami"]);
  });

  it("skips option values when finding the command, and offers the command's options after them", () => {
    expect(bashCompletes("publish", "--key", "@key.json", "--")).toEqual(expect.arrayContaining(["--content", "--dry-run", "--json"]));
    expect(bashCompletes("publish", "--key", "@key.json", "--")).not.toContain("--version");
    // A value that spells a command is still a value.
    expect(bashCompletes("verify", "--log-key", "publish", "--h")).toEqual(["--history", "--help"]);
  });

  it("offers nothing where a file or free text goes, so bash completes file names", () => {
    expect(bashCompletes("publish", "")).toEqual([]);
    expect(
      execFileSync("bash", ["--norc", "--noprofile", "-c", `source "$1"; complete -p registry`, "bash", bashScript], { encoding: "utf8" }),
    ).toMatch(/-o default/);
  });
});

describe.skipIf(!hasZsh)("registry completion zsh", () => {
  it(
    "is a completion function that compinit's compdef binds to registry, offering what bash offers",
    () => {
      const [all, prefixed, choices, subcommands, file] = zshCompletes([
        [""],
        ["pu"],
        ["discover", "--transport", ""],
        ["root-token", ""],
        ["publish", ""],
      ]);
      // zsh filters by the prefix itself, so every candidate is offered.
      expect(all!.sort()).toEqual([...helpCommands].sort());
      expect(prefixed).toContain("publish");
      expect(choices).toEqual(["connect", "connect-binary", "grpc-web", "grpc"]);
      expect(subcommands).toEqual(["create", "list", "revoke", "help"]);
      expect(file).toEqual(["(files)"]);
    },
    CLI_MS,
  );
});

it(
  "refuses a shell it has no script for, as a usage error",
  async () => {
    const result = await runCli(["completion", "fish"], childEnv({}));
    expect(result.code).toBe(2);
    expect(result.stderr).toMatch(/'fish' is invalid for argument 'shell'. Allowed choices are bash, zsh/);
  },
  CLI_MS,
);
