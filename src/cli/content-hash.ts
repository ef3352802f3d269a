import { createHash } from "node:crypto";
import { lstat, readdir, readFile } from "node:fs/promises";
import { join, relative, sep } from "node:path";

/**
 * `sha256:<hex>` of a file's bytes, or of a directory. A directory's hash covers every regular file
 * under it, however deep: their paths relative to the directory (with "/" separators, UTF-8) are
 * sorted bytewise, and for each in that order the hash reads the path, a NUL byte, the file's size
 * in decimal, a NUL byte and the file's bytes. The same tree hashes the same on every machine and
 * file system; renaming, moving or editing any file changes it. Symbolic links are refused, so the
 * hash never depends on what lies outside the directory.
 */
export async function contentHashOf(path: string): Promise<string> {
  const stats = await lstat(path);
  if (stats.isFile())
    return `sha256:${createHash("sha256")
      .update(await readFile(path))
      .digest("hex")}`;
  if (!stats.isDirectory()) throw new Error(`${path} is neither a file nor a directory`);
  const files = (await regularFiles(path, path)).sort((a, b) => Buffer.compare(Buffer.from(a), Buffer.from(b)));
  const hash = createHash("sha256");
  for (const file of files) {
    const contents = await readFile(join(path, ...file.split("/")));
    hash.update(file, "utf8").update("\0").update(String(contents.length)).update("\0").update(contents);
  }
  return `sha256:${hash.digest("hex")}`;
}

async function regularFiles(root: string, directory: string): Promise<string[]> {
  const found: string[] = [];
  for (const item of await readdir(directory, { withFileTypes: true })) {
    const full = join(directory, item.name);
    if (item.isSymbolicLink()) throw new Error(`${full} is a symbolic link; the content hash covers regular files only`);
    if (item.isDirectory()) found.push(...(await regularFiles(root, full)));
    else if (item.isFile()) found.push(relative(root, full).split(sep).join("/"));
  }
  return found;
}
