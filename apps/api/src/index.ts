export { createApp, apiRoutes, type ApiDeps } from './app.ts';
export { buildApi, type Api } from './server.ts';
