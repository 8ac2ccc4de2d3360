import { z } from 'zod';
import type { Access } from '../accounts/events.ts';
import type { StateCodec } from '../snapshots/state-codec.ts';
import { addLiveFile, initialFiles, isLive, type FileRecord, type FilesState } from './state.ts';

const count = z.number().int().nonnegative();
const v1 = z.object({
  defined: count,
  files: z.array(z.object({
    file_id: z.string(),
    task_id: z.string(),
    owner: z.string(),
    file_name: z.string(),
    description: z.string(),
    content_type: z.string(),
    size: count,
    sha256: z.string().regex(/^[0-9a-f]{64}$/),
    blob_key: z.string(),
    created_at: z.number().int(),
    updated_at: z.number().int(),
    seq: count,
    grants: z.array(z.tuple([z.string(), z.enum(['r', 'rw'])])),
  })),
  deleted: z.array(z.string()),
});

/**
 * The file catalog as a snapshot (version 1): live files in definition order with their grants
 * in the order they were given, the ids of deleted files, and the count of definitions. The
 * blob counts (blobRefs) follow from the files and are rebuilt on reading. Fields are
 * written one by one, in a fixed order, so equal states give equal bytes.
 */
export const filesCodec: StateCodec<FilesState> = {
  kind: 'files',
  version: 1,
  toJSON(state) {
    return {
      defined: state.defined,
      files: state.order.filter((f) => isLive(state, f)).map((f) => ({
        file_id: f.file_id,
        task_id: f.task_id,
        owner: f.owner,
        file_name: f.file_name,
        description: f.description,
        content_type: f.content_type,
        size: f.size,
        sha256: f.sha256,
        blob_key: f.blob_key,
        created_at: f.created_at,
        updated_at: f.updated_at,
        seq: f.seq,
        grants: [...f.grants],
      })),
      deleted: [...state.deleted],
    };
  },
  fromJSON(json) {
    const parsed = v1.parse(json);
    const state = initialFiles();
    state.defined = parsed.defined;
    for (const id of parsed.deleted) state.deleted.add(id);
    let last = -1;
    for (const f of parsed.files) {
      if (f.seq <= last || f.seq >= parsed.defined) throw new Error(`file ${f.file_id} is out of definition order`);
      if (state.files.has(f.file_id) || state.deleted.has(f.file_id)) throw new Error(`file ${f.file_id} appears twice`);
      last = f.seq;
      const file: FileRecord = { ...f, grants: new Map<string, Access>(f.grants) };
      addLiveFile(state, file);
    }
    return state;
  },
};
