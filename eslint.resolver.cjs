// eslint-plugin-import's resolver: an import means what Node makes of it at run time (type
// stripping runs the .ts files themselves; workspace packages resolve through their "exports").
// A plain CommonJS file, as the plugin loads resolvers with require().
'use strict';
const { createRequire, isBuiltin } = require('node:module');

exports.interfaceVersion = 2;
exports.resolve = (source, file) => {
  if (isBuiltin(source)) return { found: true, path: null };
  try {
    return { found: true, path: createRequire(file).resolve(source) };
  } catch {
    return { found: false };
  }
};
