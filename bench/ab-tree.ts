/**
 * The other side of an A/B run: another commit checked out as a git worktree in a temporary
 * directory and built as `npm start` runs it, so both servers run compiled code on one machine at
 * one time. It shares this checkout's node_modules when the two package.json files name the same
 * runtime dependencies (the servers run compiled code; a newer dev tool in one tree changes
 * nothing measured), and installs its own (npm ci) when they do not.
 */
import { execFileSync } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync, symlinkSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";

export interface AbTree {
  /** The commit as given (`main`, a hash), and its short hash. */
  readonly label: string;
  readonly dir: string;
  /** Removes the worktree and its directory. */
  remove(): void;
}

function git(cwd: string, ...args: string[]): string {
  return execFileSync("git", args, { cwd, encoding: "utf8", stdio: ["ignore", "pipe", "pipe"] }).trim();
}

const runtimeDependencies = (dir: string) => JSON.stringify(JSON.parse(readFileSync(join(dir, "package.json"), "utf8")).dependencies ?? {});

/** Checks out and builds `ref` of the repository at `root`; throws naming --ab when `ref` is no commit. */
export function prepareAbTree(root: string, ref: string, say: (text: string) => void): AbTree {
  let commit: string;
  try {
    commit = git(root, "rev-parse", "--verify", "--short", `${ref}^{commit}`);
  } catch {
    throw new Error(`--ab: ${ref} names no commit of ${root}`);
  }
  const dir = mkdtempSync(join(tmpdir(), `registry-ab-${commit}-`));
  git(root, "worktree", "add", "--detach", dir, commit);
  const remove = () => {
    try {
      git(root, "worktree", "remove", "--force", dir);
    } catch {
      rmSync(dir, { recursive: true, force: true });
      git(root, "worktree", "prune");
    }
  };
  try {
    if (runtimeDependencies(dir) === runtimeDependencies(root)) {
      symlinkSync(join(root, "node_modules"), join(dir, "node_modules"), "dir");
    } else {
      say(`  ${ref} (${commit}) depends on other packages: npm ci in ${dir}`);
      execFileSync("npm", ["ci", "--no-audit", "--no-fund"], { cwd: dir, stdio: ["ignore", "ignore", "inherit"] });
    }
    execFileSync("npm", ["run", "-s", "build"], { cwd: dir, stdio: "inherit" });
  } catch (error) {
    remove();
    throw error;
  }
  return { label: ref === commit ? commit : `${ref} (${commit})`, dir, remove };
}
