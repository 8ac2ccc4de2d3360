import { createWriteStream, openAsBlob } from 'node:fs';
import { basename } from 'node:path';
import { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import type { ReadableStream } from 'node:stream/web';
import type { ApiClient } from './api-client.ts';
import { assertWritable, outputFile, type OutputFile } from './output-file.ts';
import { bar, formatBytes, type Progress } from './progress.ts';
import { waitForTask, type TaskView } from './tasks-wait.ts';

/** One entry of GET /api/v1/files. */
export type FileEntry = { created_at: string; entitlement: 'r' | 'rw'; file_description: string; file_id: string; file_name: string; user_name: string };

/** Every file the caller may see, following next_cursor to the last page. */
export async function listFiles(client: ApiClient, nameContains: string | undefined): Promise<FileEntry[]> {
  const all: FileEntry[] = [];
  let cursor: string | undefined;
  do {
    const page = await client.json<{ files_list: FileEntry[]; next_cursor: string | null }>('/api/v1/files', {
      idempotent: true,
      query: { name_contains: nameContains, cursor },
    });
    all.push(...page.files_list);
    cursor = page.next_cursor ?? undefined;
  } while (cursor !== undefined);
  return all;
}

/** The file name a Content-Disposition gives (filename* first), reduced to a bare name: never a path. */
export function dispositionName(header: string | null): string | null {
  if (!header) return null;
  const star = /filename\*\s*=\s*UTF-8''([^;]+)/i.exec(header);
  let name: string | null = null;
  if (star) {
    try {
      name = decodeURIComponent(star[1]!.trim());
    } catch {
      name = null;
    }
  }
  name ??= /filename\s*=\s*"((?:[^"\\]|\\.)*)"/i.exec(header)?.[1]?.replace(/\\(.)/g, '$1') ?? null;
  const bare = name === null ? '' : basename(name.replaceAll('\\', '/'));
  return bare === '' || bare === '.' || bare === '..' ? null : bare;
}

/**
 * Downloads a file to `output` (`-` is stdout; none: its own name in the current directory).
 * The bytes go to a partial file beside the target, renamed into place once complete; an
 * existing target is refused unless `force` (before the request when the name is known).
 */
export async function getFile(
  client: ApiClient,
  fileId: string,
  output: string | undefined,
  force: boolean,
  progress: Progress,
): Promise<{ file_id: string; output: string; bytes: number }> {
  if (output !== undefined && output !== '-') assertWritable(output, force);
  const res = await client.send(`/api/v1/file/download/${encodeURIComponent(fileId)}`, { idempotent: true });
  const target = output ?? dispositionName(res.headers.get('Content-Disposition')) ?? fileId;
  // A Content-Length counts the bytes on the wire: of no use when fetch undoes a Content-Encoding.
  const total = res.headers.has('Content-Encoding') ? Number.NaN : Number(res.headers.get('Content-Length') ?? Number.NaN);
  let file: OutputFile | null = null;
  try {
    file = target === '-' ? null : outputFile(target, force);
  } catch (error) {
    await res.body?.cancel();
    throw error;
  }
  const line = progress.line(`${target}  receiving`);
  let bytes = 0;
  const body = Readable.fromWeb(res.body as ReadableStream);
  body.on('data', (chunk: Buffer) => {
    bytes += chunk.length;
    line.set(`${target}  ${bar(bytes, Number.isFinite(total) ? total : null)} ${formatBytes(bytes)}`);
  });
  if (file === null) {
    await pipeline(body, process.stdout);
    return { file_id: fileId, output: target, bytes };
  }
  try {
    await pipeline(body, createWriteStream(file.partial, { flush: true }));
    if (Number.isFinite(total) && bytes !== total) throw new Error(`${fileId}: the answer ended after ${bytes} of ${total} bytes`);
    await file.commit();
  } catch (error) {
    await file.discard();
    throw error;
  }
  return { file_id: fileId, output: target, bytes };
}

/** Defines a file (multipart, streamed from disk) and waits for its definition task. */
export async function putFile(
  client: ApiClient,
  path: string,
  description: string | undefined,
  taskWaitSeconds: number,
  progress: Progress,
): Promise<{ file_id: string; task: TaskView }> {
  const blob = await openAsBlob(path);
  const name = basename(path);
  const line = progress.line(`${name}  sending ${formatBytes(blob.size)}`);
  // Not repeated after a network failure: a second definition would be a second file.
  const accepted = await client.json<{ task_id: string; file_id: string }>('/api/v1/files', {
    method: 'POST',
    idempotent: false,
    body: () => {
      const form = new FormData();
      if (description !== undefined) form.append('file_description', description);
      form.append('file', blob, name);
      return { body: form };
    },
  });
  const task = await waitForTask(client, accepted.task_id, taskWaitSeconds, (t) => line.set(`${name}  ${t.status}`));
  return { file_id: accepted.file_id, task };
}

/** Gives a user r or rw access to a file, or (access null) takes it away. */
export async function shareFile(client: ApiClient, fileId: string, userName: string, access: 'r' | 'rw' | null): Promise<unknown> {
  const path = `/api/v1/files/${encodeURIComponent(fileId)}/entitlements/${encodeURIComponent(userName)}`;
  return access === null ? client.json(path, { method: 'DELETE', idempotent: true }) : client.json(path, { method: 'PUT', idempotent: true, json: { access } });
}

/** GET /api/v1/files/{file_id}: one file's entry. */
export type FileInfo = FileEntry & { size: number; sha256: string; content_type: string; shared_with?: Array<{ user_name: string; access: 'r' | 'rw' }> };

export const fileInfo = (client: ApiClient, fileId: string) => client.json<FileInfo>(`/api/v1/files/${encodeURIComponent(fileId)}`, { idempotent: true });

/** DELETE /api/v1/files/{file_id}: repeated after a cut connection, a delete that went through answers 404. */
export async function deleteFile(client: ApiClient, fileId: string): Promise<void> {
  await client.send(`/api/v1/files/${encodeURIComponent(fileId)}`, { method: 'DELETE', idempotent: true });
}
