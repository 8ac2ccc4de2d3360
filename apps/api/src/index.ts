export { createApp, apiRoutes, API_VERSION, type ApiDeps } from './app.ts';
export { buildOpenApi } from './openapi/document.ts';
export { buildApi, type Api } from './server.ts';
export { createHttpServer, httpServerOptions, type HttpServerOptions } from './http/http-server.ts';
export { composeApi } from './compose.ts';
export type { ApiServices } from './api-services.ts';
