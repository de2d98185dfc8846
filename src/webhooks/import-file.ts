import { constants } from 'node:fs';
import { lstat, open, readlink, realpath, type FileHandle } from 'node:fs/promises';
import { isAbsolute, join, normalize, sep } from 'node:path';

// Reads the object a large-upload-finalized notice names, from the import directory only
// (docs/security.md, attack 8: a symlink in the directory had a file outside imported, and a JSON error
// echoed the start of another file). The notice is signed, but its name is still input:
//   - the name is relative, without `..`;
//   - no component may be a symbolic link, wherever it points (inside too: a bucket mounted or
//     synced by gcsfuse, rclone or s3fs holds regular files; a link there was put by someone else);
//   - the final open uses O_NOFOLLOW (a link swapped in after the check is not followed) and
//     O_NONBLOCK (a FIFO cannot hang the import), then the opened file must be a regular file
//     whose real path is inside the directory (/proc/self/fd on Linux, realpath elsewhere);
//   - its size is checked before reading, and reading stops at the limit if it grows;
//   - every message names the object and what is wrong, never what the file holds.

export class ImportFileError extends Error {}

const refuse = (name: string, what: string) => new ImportFileError(`The object "${name}" ${what}`);

/** The bytes of `name` under `dir`, at most `maxBytes`; an ImportFileError says why not. */
export async function readImportFile(dir: string, name: string, maxBytes: number): Promise<Buffer> {
  const relative = normalize(name);
  if (name.includes('\0') || isAbsolute(relative) || relative.split(sep).includes('..'))
    throw refuse(name, 'leaves the import directory.');
  const root = await realpath(dir).catch((err: NodeJS.ErrnoException) => {
    throw new ImportFileError(`The import directory cannot be read (${err.code ?? 'error'}).`);
  });
  const parts = relative.split(sep).filter((p) => p !== '' && p !== '.');
  if (parts.length === 0) throw refuse(name, 'is not a regular file.');
  let path = root;
  for (const part of parts) {
    path = join(path, part);
    const stats = await lstat(path).catch((err: NodeJS.ErrnoException) => {
      throw refuse(name, `is not in the import directory (${err.code ?? 'error'}).`);
    });
    if (stats.isSymbolicLink())
      throw refuse(name, 'is a symbolic link: only regular files in the import directory are imported.');
  }
  let file: FileHandle;
  try {
    file = await open(path, constants.O_RDONLY | constants.O_NOFOLLOW | constants.O_NONBLOCK);
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    if (code === 'ELOOP')
      throw refuse(name, 'is a symbolic link: only regular files in the import directory are imported.');
    throw refuse(name, `cannot be opened (${code ?? 'error'}).`);
  }
  try {
    const stats = await file.stat();
    if (!stats.isFile()) throw refuse(name, 'is not a regular file.');
    if (!isInside(root, await openedPath(file, path))) throw refuse(name, 'leaves the import directory.');
    if (stats.size > maxBytes)
      throw refuse(name, `is over the import limit of ${maxBytes} bytes (incomingWebhooks.importMaxBytes).`);
    return await readAtMost(file, name, maxBytes);
  } finally {
    await file.close();
  }
}

/** Where the opened file really is: the kernel's answer on Linux, realpath elsewhere. */
async function openedPath(file: FileHandle, path: string): Promise<string> {
  try {
    return await readlink(`/proc/self/fd/${file.fd}`);
  } catch {
    return realpath(path);
  }
}

const isInside = (root: string, path: string) => path.startsWith(root.endsWith(sep) ? root : root + sep);

async function readAtMost(file: FileHandle, name: string, maxBytes: number): Promise<Buffer> {
  const chunks: Buffer[] = [];
  let total = 0;
  for (;;) {
    const buffer = Buffer.allocUnsafe(Math.min(1 << 20, maxBytes + 1 - total));
    const { bytesRead } = await file.read(buffer, 0, buffer.length, null);
    if (bytesRead === 0) return Buffer.concat(chunks, total);
    chunks.push(buffer.subarray(0, bytesRead));
    total += bytesRead;
    if (total > maxBytes)
      throw refuse(name, `is over the import limit of ${maxBytes} bytes (incomingWebhooks.importMaxBytes).`);
  }
}
