import type { Settings } from '@meridian/config';
import { archiveOptions, type ArchiveOptions } from './archive/options.ts';
import { commandConsumerOptions, type CommandConsumerOptions } from './commands/options.ts';
import { fileCommandsOptions, type FileCommandsOptions } from './files/options.ts';
import { projectorOptions, type ProjectorOptions } from './projector/options.ts';
import { readModelOptions, tasksReadModelOptions, type ReadModelOptions, type TasksReadModelOptions } from './read-models/options.ts';
import { retentionOptions, type RetentionOptions } from './retention/options.ts';
import { rollupSealOptions, type RollupSealOptions } from './rollup-seals/options.ts';
import { uploadOptions, type UploadOptions } from './uploads/options.ts';

/**
 * Each component's options, compiled once from the settings when the worker is composed
 * (compose.ts). A component takes its own options, never the settings: what it depends on is
 * its options type, with each field's setting and default beside it in the component's
 * options.ts.
 */
export type IngestOptions = {
  readonly commands: CommandConsumerOptions;
  /** The points projector's. */
  readonly projector: ProjectorOptions;
  readonly uploads: UploadOptions;
  readonly files: FileCommandsOptions;
  readonly tasksReadModel: TasksReadModelOptions;
  readonly filesReadModel: ReadModelOptions;
  readonly retention: RetentionOptions;
  readonly rollupSeals: RollupSealOptions;
  /** Null: MERIDIAN_ARCHIVE is off. */
  readonly archive: ArchiveOptions | null;
};

export function ingestOptions(settings: Settings): IngestOptions {
  return {
    commands: commandConsumerOptions(settings),
    projector: projectorOptions(settings),
    uploads: uploadOptions(settings),
    files: fileCommandsOptions(settings),
    tasksReadModel: tasksReadModelOptions(settings),
    filesReadModel: readModelOptions(settings),
    retention: retentionOptions(settings),
    rollupSeals: rollupSealOptions(settings),
    archive: archiveOptions(settings),
  };
}
