import type { Command } from "commander";

/** The shells `registry completion` writes a script for. */
export const COMPLETION_SHELLS = ["bash", "zsh"] as const;
export type CompletionShell = (typeof COMPLETION_SHELLS)[number];

/** One command of the program, as completion needs it: read from commander, never listed by hand. */
interface CommandShape {
  /** The words that lead to it after `registry`, space-separated ("" for the program). */
  readonly path: string;
  readonly subcommands: readonly string[];
  /** Every spelling of every option: --long and -s. */
  readonly options: readonly string[];
  /** Each option that takes a value, with its choices when it has a fixed set. */
  readonly valued: readonly { readonly spellings: readonly string[]; readonly choices: readonly string[] }[];
  /** The choices of its first argument, when it has a fixed set. */
  readonly argumentChoices: readonly string[];
}

/** Every command of `program`, depth first, as its help shows them (the implicit help command included). */
function commandShapes(program: Command): CommandShape[] {
  const help = program.createHelp();
  const shapes: CommandShape[] = [];
  const visit = (command: Command, path: string, parent: Command | undefined) => {
    const subcommands = help.visibleCommands(command);
    const options = help.visibleOptions(command);
    const first = command.registeredArguments[0];
    // The implicit `help [command]` (which commander leaves without a parent) completes its siblings' names.
    const isHelp = parent !== undefined && command.name() === "help" && subcommands.length === 0;
    const siblings = parent === undefined ? [] : help.visibleCommands(parent).map((sibling) => sibling.name());
    shapes.push({
      path,
      subcommands: subcommands.map((subcommand) => subcommand.name()),
      options: options.flatMap((option) => [option.long, option.short].filter((flag): flag is string => flag !== undefined)),
      valued: options
        .filter((option) => option.required || option.optional)
        .map((option) => ({
          spellings: [option.long, option.short].filter((flag): flag is string => flag !== undefined),
          choices: option.argChoices ?? [],
        })),
      argumentChoices: isHelp ? siblings.filter((name) => name !== "help") : (first?.argChoices ?? []),
    });
    for (const subcommand of subcommands) {
      visit(subcommand, path === "" ? subcommand.name() : `${path} ${subcommand.name()}`, command);
    }
  };
  visit(program, "", undefined);
  return shapes;
}

/** Words as one shell word each: every name here is [A-Za-z0-9._-], quoted anyway. */
function quoted(word: string): string {
  return `'${word.replaceAll("'", `'\\''`)}'`;
}

function listing(words: readonly string[]): string {
  return words.length === 0 ? ":" : `printf '%s\\n' ${words.map(quoted).join(" ")}`;
}

/**
 * The part both shells share, in POSIX sh (zsh runs it under `emulate sh`): the tables of
 * commands and options, and __registry_candidates, which prints the candidates for the last of
 * the words it is given (the words after `registry`), one per line; none means file names.
 */
function sharedFunctions(program: Command): string {
  const shapes = commandShapes(program);
  const cases = (lines: string[]) => lines.map((line) => `    ${line}`).join("\n");
  const commandCases = shapes
    .filter((shape) => shape.subcommands.length > 0)
    .map((shape) => `${quoted(shape.path)}) ${listing(shape.subcommands)} ;;`);
  const optionCases = shapes.map((shape) => `${quoted(shape.path)}) ${listing(shape.options)} ;;`);
  const valueCases = shapes.flatMap((shape) =>
    shape.valued.map(
      (option) => `${option.spellings.map((flag) => quoted(`${shape.path}|${flag}`)).join("|")}) ${listing(option.choices)} ;;`,
    ),
  );
  const argumentCases = shapes
    .filter((shape) => shape.argumentChoices.length > 0)
    .map((shape) => `${quoted(shape.path)}) ${listing(shape.argumentChoices)} ;;`);
  return `__registry_commands() {
  case "$1" in
${cases(commandCases)}
  esac
}

__registry_options() {
  case "$1" in
${cases(optionCases)}
  esac
}

# The values option $2 of command $1 takes (none listed: any value); fails when it takes no value.
__registry_option_values() {
  case "$1|$2" in
${cases(valueCases)}
    *) return 1 ;;
  esac
}

__registry_argument_values() {
  case "$1" in
${cases(argumentCases)}
  esac
}

__registry_candidates() {
  # Not "path": zsh ties that name to PATH.
  local chain="" word values subcommand
  while [ "$#" -gt 1 ]; do
    word=$1
    shift
    case $word in
      -*=* | --) ;;
      -*)
        if values=$(__registry_option_values "$chain" "$word"); then
          # The word being completed is this option's value.
          if [ "$#" -eq 1 ]; then
            [ -n "$values" ] && printf '%s\\n' "$values"
            return 0
          fi
          shift
        fi
        ;;
      *)
        for subcommand in $(__registry_commands "$chain"); do
          if [ "$subcommand" = "$word" ]; then
            chain=\${chain:+$chain }$word
            break
          fi
        done
        ;;
    esac
  done
  case $1 in
    -*) __registry_options "$chain" ;;
    *)
      values=$(__registry_commands "$chain")
      [ -n "$values" ] || values=$(__registry_argument_values "$chain")
      [ -n "$values" ] && printf '%s\\n' "$values"
      ;;
  esac
  return 0
}`;
}

/** The completion script for `shell`, derived from `program`'s commands, options and choices. */
export function completionScript(program: Command, shell: CompletionShell): string {
  const name = program.name();
  const shared = sharedFunctions(program);
  if (shell === "bash") {
    return `# bash completion for ${name}: source <(${name} completion bash)
${shared}

_registry() {
  local cur=\${COMP_WORDS[COMP_CWORD]}
  local IFS=$'\\n'
  COMPREPLY=($(compgen -W "$(__registry_candidates "\${COMP_WORDS[@]:1:COMP_CWORD}")" -- "$cur"))
}

# With no candidate (an entry's manifest, a key file), bash completes file names.
complete -o default -F _registry ${name}
`;
  }
  return `#compdef ${name}
# zsh completion for ${name}: ${name} completion zsh > "\${fpath[1]}/_${name}", or source <(${name} completion zsh)
${shared}

__registry_candidates_sh() {
  emulate -L sh
  __registry_candidates "$@"
}

_registry() {
  local -a candidates
  candidates=(\${(f)"$(__registry_candidates_sh "\${(@)words[2,CURRENT]}")"})
  if (( \${#candidates} == 0 )); then
    _files
  else
    compadd -- "\${candidates[@]}"
  fi
}

if [ "\${funcstack[1]}" = "_registry" ]; then
  _registry "$@"
else
  compdef _registry ${name}
fi
`;
}
