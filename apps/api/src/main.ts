import { enableCompileCache } from 'node:module';

// Node keeps each module's compiled code (types stripped, V8 bytecode) in a cache on disk
// (os.tmpdir()/node-compile-cache, or NODE_COMPILE_CACHE): a start after the first one skips
// stripping and compiling some thousand modules, about half the CPU of loading them. A cache that
// cannot be written (read-only disk) only means a slower start. Enabled before anything else is
// imported, so the modules below are loaded through it.
const { directory } = enableCompileCache();
// A worker thread (the JSON upload check's) does not share this thread's cache; it takes one from
// NODE_COMPILE_CACHE in the environment it inherits. Without it, each worker stripped its modules'
// types again through Node's TypeScript stripper, swc compiled to WebAssembly and loaded into the
// worker for that: a started worker took 85 MB of the api's memory, 53–56 MB with the cache.
if (directory !== undefined) process.env.NODE_COMPILE_CACHE ??= directory;
await import('./start.ts');
