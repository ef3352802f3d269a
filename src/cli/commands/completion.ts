import { Argument, type Command } from "commander";
import type { CliContext } from "../cli-context.js";
import { COMPLETION_SHELLS, completionScript, type CompletionShell } from "../completion-script.js";

/** `registry completion bash|zsh`: a completion script made from this program's own commands and options. */
export function registerCompletionCommand(program: Command, context: CliContext): void {
  program
    .command("completion")
    .description("print a shell completion script for bash or zsh, made from this version's commands and options")
    .addArgument(new Argument("<shell>", "the shell").choices(COMPLETION_SHELLS))
    .addHelpText(
      "after",
      "\nbash: source <(registry completion bash), or save it in /etc/bash_completion.d/registry.\n" +
        "zsh:  source <(registry completion zsh), or save it as _registry in a directory of $fpath.",
    )
    .action((shell: CompletionShell) => {
      context.stdout(completionScript(program, shell));
      context.exitCode = 0;
    });
}
