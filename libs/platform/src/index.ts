export { createAdapters, createPlatform, foldContext, sharedServices, type Adapters, type Platform, type PlatformOptions } from './platform.ts';
export { archiveObjects, archivedLog } from './archive.ts';
