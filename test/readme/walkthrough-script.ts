import { execFileSync } from "node:child_process";
import { copyFile, mkdir, symlink } from "node:fs/promises";
import { existsSync } from "node:fs";
import { dirname, join } from "node:path";

/**
 * The README walkthrough as the shell script a reader gets by pasting it whole: every fenced block
 * whose info string is exactly `sh`, from the "## Walkthrough" heading to the next level-2
 * heading, in order (its "###" subsections included). Blocks fenced otherwise (```json,
 * ```console, ...) are illustrations and not run; a `sh` block that must not run is marked by the
 * line `<!-- walkthrough: not run -->` just above its fence.
 */
export function walkthroughScript(readme: string): string {
  const lines = readme.split("\n");
  const start = lines.findIndex((line) => line.trim() === "## Walkthrough");
  if (start < 0) throw new Error('README.md has no "## Walkthrough" heading');
  const afterEnd = lines.findIndex((line, index) => index > start && /^## /.test(line));
  const section = lines.slice(start + 1, afterEnd < 0 ? lines.length : afterEnd);

  const blocks: string[] = [];
  let block: string[] | undefined;
  let skipped = false;
  for (const [index, line] of section.entries()) {
    if (block === undefined && skipped === false && /^```/.test(line)) {
      const info = line.slice(3).trim();
      const notRun = section[index - 1]?.trim() === "<!-- walkthrough: not run -->";
      if (info === "sh" && !notRun) block = [];
      else skipped = true;
    } else if (/^```\s*$/.test(line)) {
      if (block !== undefined) blocks.push(block.join("\n"));
      block = undefined;
      skipped = false;
    } else if (block !== undefined) {
      block.push(line);
    }
  }
  if (block !== undefined || skipped) throw new Error("README.md's walkthrough has an unclosed code fence");
  return `${blocks.join("\n")}\n`;
}

/**
 * A fresh clone of the working tree in `target`, as if its edits were committed: the tracked files
 * as they are on disk now, and new files git does not ignore (an edit may import one), so
 * uncommitted edits are what is tested; files deleted on disk are left out. node_modules is
 * linked, standing in for `npm install`. Returns the paths copied.
 */
export async function copyWorkingTree(repository: string, target: string): Promise<string[]> {
  const listed = execFileSync("git", ["ls-files", "-z", "--cached", "--others", "--exclude-standard"], {
    cwd: repository,
    encoding: "utf8",
  });
  // A node_modules that is a symlink (a worktree sharing another's) is listed, and linked below instead.
  const tracked = [...new Set(listed.split("\0").filter((path) => path !== "" && path !== "node_modules"))];
  const copied: string[] = [];
  for (const path of tracked) {
    if (!existsSync(join(repository, path))) continue;
    copied.push(path);
    await mkdir(dirname(join(target, path)), { recursive: true });
    await copyFile(join(repository, path), join(target, path));
  }
  await symlink(join(repository, "node_modules"), join(target, "node_modules"));
  return copied;
}

/**
 * Files in `directory` that git would show as untracked in a clone: neither among `copied` (what
 * copyWorkingTree copied, since the repository's own list may have changed since) nor ignored.
 */
export function untrackedFiles(directory: string, copied: readonly string[]): string[] {
  const tracked = new Set(copied);
  if (!existsSync(join(directory, ".git"))) execFileSync("git", ["init", "-q"], { cwd: directory });
  const others = execFileSync("git", ["ls-files", "-z", "--others", "--exclude-standard"], { cwd: directory, encoding: "utf8" });
  // node_modules is the test's symlink, which .gitignore's "node_modules/" (a directory) does not match.
  return others.split("\0").filter((path) => path !== "" && path !== "node_modules" && !tracked.has(path));
}
