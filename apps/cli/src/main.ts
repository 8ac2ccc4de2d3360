import { enableCompileCache } from 'node:module';

// Node keeps each module's compiled code (types stripped, V8 bytecode) in a cache on disk
// (os.tmpdir()/node-compile-cache, or NODE_COMPILE_CACHE): a start after the first one skips
// stripping and compiling some thousand modules, about half the CPU of loading them. A cache that
// cannot be written (read-only disk) only means a slower start. Enabled before anything else is
// imported, so the modules below are loaded through it.
enableCompileCache();
await import('./start.ts');
